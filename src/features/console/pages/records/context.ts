// What the records page hands to its parts.
import type { Project, Selection } from "../../api";

export type View = "record" | "children" | "search";

export type RecordsCtx = {
  gid: string;
  project: Project;
  /** The project's languages, the main one first. */
  langs: string[];
  ordering: string;
  channel: string;
  /** Opens a record (in a view; default: the current one, the editor from the search). */
  open: (record: string, view?: View) => void;
  /** Follows a background job with a progress bar. */
  track: (token: string, label: string) => void;
  selection: Selection;
  setSelection: (s: Selection) => void;
};

export const selectedGids = (s: Selection): Set<string> => new Set(s.filter((x): x is string => typeof x === "string"));
