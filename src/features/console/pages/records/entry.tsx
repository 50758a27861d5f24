// The entry of the records bundle (records.html): the whole console plus the records pages.
import "./register";
import "../../main";
