import type { Actor } from "../../core/actor";
import type { Answer } from "../../core/answer";
import { sessionOf } from "../../db/query";
import { CHILD_DEFINITIONS_FIRST } from "./records.queries";
import type { Ctx } from "../../platform/context";
import { layoutOf, Out, rowsOf } from "../schema/schema.api";
import { childrenIn, formsOf, mustRecord, orderingOf, pageOf, recordsRead, rowsInOrder } from "./records.service";

/**
 * `records/worksheet`: what a grid needs for one parent — the record, its path from the root down
 * to it, one page of its children in an ordering (channels are not used) and `sibling_definitions`,
 * the definitions the children use (all of them, not only this page's), with those definitions and
 * their layouts in `data`.
 */
const WORKSHEET_PAGE = { size: 20, max: 1000 };

export async function getWorksheet(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: {
    record?: unknown;
    ordering?: unknown;
    language?: string | null;
    languages?: string[] | null;
    "page.top"?: unknown;
    "page.size"?: unknown;
  },
): Promise<Answer> {
  return await recordsRead(ctx, actor, projectGid, async (tx, view) => {
    const langs = view.languagesOf(input);
    const rec = await mustRecord(tx, projectGid, input.record);
    const page = pageOf(input, WORKSHEET_PAGE);
    const c = await childrenIn(tx, rec.gid, { ordering: orderingOf(view, input.ordering), ...page });
    const path = [...rec.path].reverse();
    const defs = (await sessionOf(tx).query<{ d: string }>(CHILD_DEFINITIONS_FIRST).all(rec.gid)).map((r) => r.d);
    const out = new Out().has("definition").has("layout");
    for (const d of await rowsOf(tx, "definition", projectGid, defs))
      out.add("definition", d).add("layout", await layoutOf(tx, d));
    const rows = await rowsInOrder(tx, projectGid, [...path, ...c.gids]);
    return {
      result: { record: rec.gid, path, children: c.gids, "children.size": c.total, sibling_definitions: defs },
      data: { ...out.data(), records: await formsOf(tx, view, rows, { languages: langs }) },
    };
  });
}
