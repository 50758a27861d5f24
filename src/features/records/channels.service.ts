import type { Actor } from "../../core/actor";
import type { Answer } from "../../core/answer";
import { invalidParameter, missing } from "../../core/errors";
import { now } from "../../core/ids";
import type { Tx } from "../../db/connection";
import { sessionOf } from "../../db/query";
import type { Ctx } from "../../platform/context";
import type { JobKind } from "../../platform/jobs/runner";
import { ALL_CHANNEL } from "../projects/projects.api";
import {
  descendants,
  formsOf,
  mustRecord,
  recordRow,
  recordsWrite,
  rowsByGids,
  type Rec,
  type Touch,
} from "./records.service";
import { CHANNELS_UPDATE, SUBTREE_SIZE } from "./records.queries";
import type { SchemaView } from "./values.service";

/**
 * Channels of records: `__all__` is always on; set, copy_from_parent, copy_down (a job over the
 * subtree, `copy_record_channels_down`) and copy_up (switches the record's enabled channels on for
 * every ancestor, never off).
 */

type Langs = { language?: unknown; languages?: unknown };

/** The listed channels (each a project channel, else 422), or every project channel when absent. */
function channelList(view: SchemaView, v: unknown, required = false): string[] {
  if (v === undefined || v === null) {
    if (required) throw missing("channels");
    return view.options.orderedchannels;
  }
  if (!Array.isArray(v) || v.some((c) => typeof c !== "string"))
    throw invalidParameter("channels", { expected: "an array of channel keys" });
  const bad = (v as string[]).filter((c) => !view.hasChannel(c));
  if (bad.length)
    throw invalidParameter("channels", {
      reason: `not a project channel: ${bad.join(", ")}`,
      expected: view.options.orderedchannels,
    });
  return [...new Set(v as string[])];
}

/** Writes a record's channels when they change (kept in the project's channel order, `__all__` first). */
async function writeChannels(tx: Tx, view: SchemaView, touch: Touch, rec: Rec, next: Set<string>): Promise<boolean> {
  next.add(ALL_CHANNEL);
  const ordered = [
    ALL_CHANNEL,
    ...view.options.orderedchannels.filter((c) => c !== ALL_CHANNEL && next.has(c)),
    ...[...next].filter((c) => c !== ALL_CHANNEL && !view.hasChannel(c)),
  ];
  if (JSON.stringify(ordered) === JSON.stringify(rec.channels)) return false;
  await sessionOf(tx)
    .query(CHANNELS_UPDATE(tx))
    .run(JSON.stringify(ordered), Math.max(now(), rec.updatedOn + 1e-6), rec.id);
  rec.channels = ordered;
  touch.update(rec.gid);
  return true;
}

/** Switches channels on or off for one record (inside the caller's transaction). */
export async function setChannelsIn(
  tx: Tx,
  view: SchemaView,
  touch: Touch,
  rec: Rec,
  channels: string[],
  enabled: boolean,
): Promise<boolean> {
  const next = new Set(rec.channels);
  for (const c of channels) {
    if (c === ALL_CHANNEL) continue;
    if (enabled) next.add(c);
    else next.delete(c);
  }
  return await writeChannels(tx, view, touch, rec, next);
}

/** Makes `rec`'s state of the listed channels equal to `from`'s. */
async function copyState(
  tx: Tx,
  view: SchemaView,
  touch: Touch,
  rec: Rec,
  from: string[],
  channels: string[],
): Promise<boolean> {
  const next = new Set(rec.channels);
  for (const c of channels) {
    if (from.includes(c)) next.add(c);
    else next.delete(c);
  }
  return await writeChannels(tx, view, touch, rec, next);
}

const answer = async (tx: Tx, view: SchemaView, input: Langs, rec: Rec): Promise<Answer> => ({
  result: { record: rec.gid },
  data: {
    records: await formsOf(tx, view, await rowsByGids(tx, view.projectGid, [rec.gid]), {
      languages: view.languagesOf(input),
    }),
  },
});

export async function setChannels(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record: string; channels?: unknown; enabled?: unknown },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
    const rec = await mustRecord(tx, projectGid, input.record, "record", true);
    const channels = channelList(view, input.channels, true);
    if (input.enabled === undefined || input.enabled === null) throw missing("enabled");
    if (typeof input.enabled !== "boolean") throw invalidParameter("enabled", { expected: "true or false" });
    await setChannelsIn(tx, view, touch, rec, channels, input.enabled);
    return await answer(tx, view, input, rec);
  });
}

export async function copyChannelsFromParent(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: Langs & { record: string; channels?: unknown },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
    const rec = await mustRecord(tx, projectGid, input.record, "record", true);
    const channels = channelList(view, input.channels);
    const parent = rec.parent ? await recordRow(tx, projectGid, rec.parent) : undefined;
    if (parent) await copyState(tx, view, touch, rec, parent.channels, channels);
    return await answer(tx, view, input, rec);
  });
}

/** `records/channels/copy_down`: a job giving the whole subtree the record's state of the channels. */
export async function copyChannelsDown(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { record: string; channels?: unknown },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view) => {
    const rec = await mustRecord(tx, projectGid, input.record, "record", true);
    const channels = channelList(view, input.channels);
    const n = ((await sessionOf(tx).query(SUBTREE_SIZE).get(rec.gid)) as { n: number }).n;
    const token = await ctx.jobs.enqueue({
      kind: "copy_record_channels_down",
      projectGid,
      userGid: actor.userGid,
      params: { actor, record: rec.gid, channels },
      info: { total: n, remaining: n },
    });
    return { result: { "job.token": token }, data: {} };
  });
}

const CHUNK = 500;

/** The `copy_record_channels_down` job: the subtree in chunks of CHUNK records, one unit of work each. */
export const copyChannelsDownJob: JobKind = {
  async handler(ctx, job, progress) {
    const { actor, record, channels } = job.params as { actor: Actor; record: string; channels: string[] };
    const gids = await recordsWrite(ctx, actor, job.projectGid!, async (tx) =>
      (await descendants(tx, record)).map((d) => d.gid),
    );
    await progress.total(gids.length);
    let changed = 0;
    for (let i = 0; i < gids.length; i += CHUNK) {
      const chunk = gids.slice(i, i + CHUNK);
      await recordsWrite(ctx, actor, job.projectGid!, async (tx, _log, view, touch) => {
        const src = await recordRow(tx, view.projectGid, record);
        if (!src) return;
        for (const r of await rowsByGids(tx, view.projectGid, chunk))
          if (await copyState(tx, view, touch, r, src.channels, channels)) changed++;
      });
      await progress.step(chunk.length);
    }
    return { changed };
  },
};

/** `records/channels/copy_up`: switches the record's enabled channels (of the listed ones) on for every ancestor. */
export async function copyChannelsUp(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { record: string; channels?: unknown },
): Promise<Answer> {
  return await recordsWrite(ctx, actor, projectGid, async (tx, _log, view, touch) => {
    const rec = await mustRecord(tx, projectGid, input.record, "record", true);
    const on = channelList(view, input.channels).filter((c) => rec.channels.includes(c));
    for (const a of await rowsByGids(tx, projectGid, rec.path.slice(1)))
      await setChannelsIn(tx, view, touch, a, on, true);
    return { result: {}, data: {} };
  });
}
