// Puts the schema and records pages into the project navigation of this bundle (see
// separatePages in pages/project.tsx); imported by entry.tsx before the app starts.
import { separatePages } from "../project";
import { SchemaPage } from "../schema";
import { RecordsPage } from "./page";

separatePages.set("schema", SchemaPage);
separatePages.set("records", RecordsPage);
