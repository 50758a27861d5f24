import type { Actor } from "../../core/actor";
import type { Answer } from "../../core/answer";
import { invalidParameter, missing } from "../../core/errors";
import { sessionOf } from "../../db/query";
import type { Ctx } from "../../platform/context";
import { ALL_CHANNEL } from "../projects/projects.api";
import { LIVE_CHILDREN_ROWS } from "./records.queries";
import { channelOf, DELETED, mustRecord, recOf, recordsRead, rowsByGids, type Rec } from "./records.service";
import { dict, isEmpty, storedValue, type SchemaView } from "./values.service";

/**
 * Completeness (an extension, docs/records.md "Completeness"): per record and language, how many of
 * its definition's required fields (`is_required`) hold a value. A non-localized field counts in
 * every language. With `channel`, records not enabled in that channel are reported as such
 * (`in_channel: false`) and left out of the summary.
 */

export type CompletenessInput = {
  language?: unknown;
  languages?: unknown;
  record?: unknown;
  records?: unknown;
  parent?: unknown;
  channel?: unknown;
};

export type LanguageCompleteness = { percent: number; required: number; filled: number; missing: string[] };

const MAX_RECORDS = 1000;

async function completenessOf(
  view: SchemaView,
  r: Rec,
  languages: string[],
): Promise<Record<string, LanguageCompleteness>> {
  const d = await view.def(r.definition);
  const required = d.fields.filter((f) => f.required);
  const out = dict<LanguageCompleteness>();
  for (const lang of languages) {
    const missingFields = required.filter((f) => isEmpty(storedValue(r.vals, f, lang))).map((f) => f.name);
    const filled = required.length - missingFields.length;
    out[lang] = {
      percent: required.length ? Math.floor((filled * 100) / required.length) : 100,
      required: required.length,
      filled,
      missing: missingFields,
    };
  }
  return out;
}

/** The records asked for: `record`, `records` (at most 1,000 gids) or `parent` (its first 1,000 live children). */
async function recordsOf(view: SchemaView, projectGid: string, input: CompletenessInput): Promise<Rec[]> {
  const tx = view.tx;
  if (input.record !== undefined && input.record !== null) return [await mustRecord(tx, projectGid, input.record)];
  if (input.parent !== undefined && input.parent !== null) {
    const parent = await mustRecord(tx, projectGid, input.parent, "parent");
    return (await sessionOf(tx).query(LIVE_CHILDREN_ROWS(tx)).all(parent.gid, DELETED, MAX_RECORDS)).map(recOf);
  }
  if (input.records === undefined || input.records === null) throw missing("records");
  if (!Array.isArray(input.records) || input.records.some((g) => typeof g !== "string"))
    throw invalidParameter("records", { expected: "an array of record gids" });
  if (input.records.length > MAX_RECORDS) throw invalidParameter("records", { expected: "at most 1000 gids" });
  const gids = [...new Set(input.records as string[])];
  const byGid = new Map((await rowsByGids(tx, projectGid, gids)).map((r) => [r.gid, r]));
  return gids.map((g) => byGid.get(g)).filter((r): r is Rec => !!r);
}

/** POST records/completeness: any member of the project may ask (the same access as records/get). */
export async function getCompleteness(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: CompletenessInput,
): Promise<Answer> {
  return await recordsRead(ctx, actor, projectGid, async (_tx, view) => {
    const languages = view.languagesOf(input);
    const channel = input.channel === undefined || input.channel === null ? undefined : channelOf(view, input.channel);
    const rows = await recordsOf(view, projectGid, input);
    const completeness = dict<unknown>();
    const sum = dict<{ required: number; filled: number; complete: number }>();
    for (const l of languages) sum[l] = { required: 0, filled: 0, complete: 0 };
    let counted = 0;
    for (const r of rows) {
      const inChannel = !channel || channel === ALL_CHANNEL || r.channels.includes(channel);
      const langs = await completenessOf(view, r, languages);
      completeness[r.gid] = { in_channel: inChannel, languages: langs };
      if (!inChannel) continue;
      counted++;
      for (const l of languages) {
        const c = langs[l]!;
        sum[l]!.required += c.required;
        sum[l]!.filled += c.filled;
        if (c.filled === c.required) sum[l]!.complete++;
      }
    }
    const summary = dict<unknown>();
    for (const l of languages) {
      const s = sum[l]!;
      summary[l] = {
        percent: s.required ? Math.floor((s.filled * 100) / s.required) : 100,
        complete: s.complete,
        records: counted,
      };
    }
    return {
      result: {
        records: rows.map((r) => r.gid),
        languages,
        ...(channel ? { channel } : {}),
        completeness,
        "completeness.summary": summary,
      },
      data: {},
    };
  });
}
