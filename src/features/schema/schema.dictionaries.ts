import type { Tx } from "../../db/connection";
import { registerProjectDictionary } from "../../services/session.service";
import { rowsOf, type Kind } from "./schema.core";
import { formOf, type Form } from "./working-copies";

/**
 * The project data dictionaries `definitions`, `classes`, `fields` and `layouts` of `auth`,
 * `init` and project `login`: every item of the project, working copies and new items included
 * (so a client sees work in progress), keyed by gid.
 */
function dictionary(kind: Kind) {
  return (tx: Tx, projectGid: string): Record<string, Form> => {
    const out: Record<string, Form> = {};
    for (const r of rowsOf(tx, kind, projectGid)) out[r.gid] = formOf(kind, r);
    return out;
  };
}

export const definitionsDictionary = dictionary("definition");
export const classesDictionary = dictionary("class");
export const fieldsDictionary = dictionary("field");
export const layoutsDictionary = dictionary("layout");

/** Wires the four builders into the init payload (called once when the routes are built). */
export function registerSchemaDictionaries(): void {
  registerProjectDictionary("definitions", definitionsDictionary);
  registerProjectDictionary("classes", classesDictionary);
  registerProjectDictionary("fields", fieldsDictionary);
  registerProjectDictionary("layouts", layoutsDictionary);
}
