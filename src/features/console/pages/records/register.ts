// Puts the records pages into the project navigation of this bundle (see separatePages in
// pages/project.tsx); imported by entry.tsx before the app starts.
import { separatePages } from "../project";
import { RecordsPage } from "./page";

separatePages.set("records", RecordsPage);
