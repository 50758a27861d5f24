import type { Tx } from "../../db/connection";
import { rowsOf, snapshotValue, type Kind } from "./items.service";
import { formOf, type Form } from "./copies.service";

/**
 * The project data dictionaries `definitions`, `classes`, `fields` and `layouts` of `auth`,
 * `init` and project `login`: every item of the project, working copies and new items included
 * (so a client sees work in progress), keyed by gid.
 */
function dictionary(kind: Kind) {
  return async (tx: Tx, projectGid: string): Promise<Record<string, Form>> =>
    // Kept in the schema's snapshot until the project's schema changes (schema.generation.ts).
    await snapshotValue(tx, projectGid, `dictionary ${kind}`, async () => {
      const out: Record<string, Form> = {};
      for (const r of await rowsOf(tx, kind, projectGid)) out[r.gid] = formOf(kind, r);
      return out;
    });
}

/** Listed in the schema's feature descriptor (`projectDictionaries`). */
export const definitionsDictionary = dictionary("definition");
export const classesDictionary = dictionary("class");
export const fieldsDictionary = dictionary("field");
export const layoutsDictionary = dictionary("layout");
