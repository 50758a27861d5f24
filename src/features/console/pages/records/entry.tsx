// The entry of the second bundle (records.html): the whole console plus the schema and records pages.
import "./register";
import "../../main";
