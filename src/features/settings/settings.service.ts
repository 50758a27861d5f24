import type { Answer } from "../../core/answer";
import type { Actor } from "../../core/actor";
import { invalidParameter, missing, unprocessable, validationFailed } from "../../core/errors";
import { newGid } from "../../core/ids";
import { isLanguage } from "../../core/languages";
import type { Tx } from "../../db/connection";
import type { ChangeLog } from "../../db/mutate";
import type { Ctx } from "../../platform/context";
import {
  inProject,
  type ProjectWork,
  projectFull,
  updateProject,
  type Project,
  ALL_CHANNEL,
  projectOptions,
  type ProjectOptions,
} from "../projects/projects.api";

/**
 * Project settings (issue 10, docs/settings.md): the project's languages, channels, orderings and
 * fieldlists, kept in `projects.options`. Every change writes the normalized options back, raises
 * `updated_on` and announces the project with a `cc.projects` UPDATE item in the same transaction.
 * Any member of the project may change them (the reference's 403 reads "not a member").
 */

/** The three named, ordered lists, by the request member that names one entry. */
export type ListKind = "channel" | "ordering" | "fieldlist";
const LISTS = new Map<
  ListKind,
  { dict: "channels" | "orderings" | "fieldlists"; order: "orderedchannels" | "orderedorderings" | "orderedfieldlists" }
>([
  ["channel", { dict: "channels", order: "orderedchannels" }],
  ["ordering", { dict: "orderings", order: "orderedorderings" }],
  ["fieldlist", { dict: "fieldlists", order: "orderedfieldlists" }],
]);

const invalid = (name: string, reason: string) => invalidParameter(name, { reason });

/** Writes the options back and tells the project's audience (members, invitees, the owner). */
async function saveOptions(tx: Tx, log: ChangeLog, project: Project, options: ProjectOptions): Promise<Project> {
  return await updateProject(tx, log, project.gid, { options: { ...project.options, ...options } });
}

/** The answer of a settings change: result `project` (plus `extra`), data the project's full form. */
async function changed(
  ctx: Pick<Ctx, "hooks">,
  tx: Tx,
  p: Project,
  extra: Record<string, unknown> = {},
  data: Record<string, unknown> = {},
): Promise<Answer> {
  return {
    result: { ...extra, project: p.gid },
    data: { "cc.projects": { [p.gid]: await projectFull(ctx, tx, p) }, ...data },
  };
}

/** Runs a settings change of an active project as a member. */
async function change<T>(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  fn: (work: ProjectWork, options: ProjectOptions) => T,
): Promise<T> {
  return await inProject(ctx, actor, projectGid, "member", (work) => {
    if (work.project.status !== "active")
      throw unprocessable("Cannot perform update", { reason: "The project is not active" });
    return fn(work, projectOptions(work.project));
  });
}

function nameOf(name: unknown): string {
  const trimmed = typeof name === "string" ? name.trim() : "";
  if (!trimmed || trimmed.length > 200)
    throw validationFailed([{ field: "name", rule: "length", message: "1 to 200 characters" }]);
  return trimmed;
}

/** Moves `key` before `before` in `order` (to the end without `before`). */
function moved(order: string[], key: string, before: string | undefined): string[] {
  const rest = order.filter((k) => k !== key);
  const at = before === undefined ? rest.length : rest.indexOf(before);
  rest.splice(at, 0, key);
  return rest;
}

/** The data dictionaries of the schema (definitions, classes, fields, layouts), as `languages/add` answers them. */
async function schemaData(ctx: Ctx, tx: Tx, projectGid: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const name of ["definitions", "classes", "fields", "layouts"]) {
    const fn = ctx.hooks.projectDictionaries.get(name);
    out[name] = fn ? await fn(tx, projectGid) : {};
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Languages

/**
 * `languages/add`: a code of `cc.languages` (lower case) joins the end of the project's languages.
 * The schema's localized members get a key for it (the `languageAdded` hooks); the answer carries
 * the project and the schema dictionaries, as the reference's.
 */
export async function addLanguage(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { language: string },
): Promise<Answer> {
  return await change(ctx, actor, projectGid, async ({ tx, log, project }, o) => {
    if (!isLanguage(input.language))
      throw invalid("language", "Not a code of cc.languages (lower case), see /api/languages/get");
    if (o.languages.includes(input.language))
      throw unprocessable("Cannot perform update", {
        reason: "The project has this language already",
        language: input.language,
      });
    const p = await saveOptions(tx, log, project, { ...o, languages: [...o.languages, input.language] });
    for (const hook of ctx.hooks.languageAdded) await hook(ctx, tx, log, projectGid, input.language);
    return await changed(ctx, tx, p, {}, await schemaData(ctx, tx, projectGid));
  });
}

/** `languages/move`: `language` goes before `before_language` (to the end without it); the first language is the main one. */
export async function moveLanguage(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { language: string; before_language?: string },
): Promise<Answer> {
  return await change(ctx, actor, projectGid, async ({ tx, log, project }, o) => {
    if (!o.languages.includes(input.language)) throw invalid("language", "Not a language of the project");
    if (input.before_language !== undefined && !o.languages.includes(input.before_language))
      throw invalid("before_language", "Not a language of the project");
    if (input.before_language === input.language) return await changed(ctx, tx, project);
    return await changed(
      ctx,
      tx,
      await saveOptions(tx, log, project, {
        ...o,
        languages: moved(o.languages, input.language, input.before_language),
      }),
    );
  });
}

/**
 * `languages/remove`: the language leaves the project's list; a project keeps at least one. No
 * answer shows its key afterwards (the `languageRemoved` hooks hide it and announce what changed).
 * Stored values in that language are kept (hidden, back when the language is added again) unless
 * the confirmation member `remove_values: true` is sent: then the hooks drop them in the same
 * transaction and `result.removed_values` says how many went.
 */
export async function removeLanguage(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  input: { language: string; remove_values?: boolean },
): Promise<Answer> {
  return await change(ctx, actor, projectGid, async ({ tx, log, project }, o) => {
    if (!o.languages.includes(input.language)) throw invalid("language", "Not a language of the project");
    if (o.languages.length === 1)
      throw unprocessable("Cannot perform update", {
        reason: "A project keeps at least one language",
        language: input.language,
      });
    const p = await saveOptions(tx, log, project, { ...o, languages: o.languages.filter((l) => l !== input.language) });
    const keep = input.remove_values !== true;
    let removed = 0;
    for (const hook of ctx.hooks.languageRemoved) removed += await hook(ctx, tx, log, projectGid, input.language, keep);
    if (keep) return await changed(ctx, tx, p, {}, await schemaData(ctx, tx, projectGid));
    return await changed(ctx, tx, p, { removed_values: removed }, await schemaData(ctx, tx, projectGid));
  });
}

// ---------------------------------------------------------------------------------------------
// Channels, orderings, fieldlists: one set of operations for the three named lists

const kindOf = (kind: ListKind) => LISTS.get(kind)!;

/** The entry named by the request member `kind`, or 400; `__all__` only where `allowAll`. */
function entry(o: ProjectOptions, kind: ListKind, key: unknown, member: string = kind): string {
  const { dict } = kindOf(kind);
  if (typeof key !== "string" || !Object.hasOwn(o[dict], key)) throw invalid(member, `No such ${kind} in the project`);
  if (kind === "channel" && key === ALL_CHANNEL)
    throw invalid(member, "The __all__ channel cannot be renamed, moved or deleted");
  return key;
}

/** `<kind>s/create`: a new entry (key: a new gid) at the end of the list; result names its key. */
export async function createEntry(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  kind: ListKind,
  input: { name: string },
): Promise<Answer> {
  return await change(ctx, actor, projectGid, async ({ tx, log, project }, o) => {
    const name = nameOf(input.name);
    const { dict, order } = kindOf(kind);
    const key = newGid();
    const p = await saveOptions(tx, log, project, {
      ...o,
      [dict]: { ...o[dict], [key]: name },
      [order]: [...o[order], key],
    });
    return await changed(ctx, tx, p, { [kind]: key });
  });
}

/** `<kind>s/update`: renames an entry. */
export async function renameEntry(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  kind: ListKind,
  input: Record<string, unknown>,
): Promise<Answer> {
  return await change(ctx, actor, projectGid, async ({ tx, log, project }, o) => {
    const key = entry(o, kind, input[kind]);
    const name = nameOf(input.name);
    const { dict } = kindOf(kind);
    return await changed(ctx, tx, await saveOptions(tx, log, project, { ...o, [dict]: { ...o[dict], [key]: name } }));
  });
}

/** `<kind>s/move`: an entry goes before `before_<kind>` (to the end without it); nothing goes before `__all__`. */
export async function moveEntry(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  kind: ListKind,
  input: Record<string, unknown>,
): Promise<Answer> {
  return await change(ctx, actor, projectGid, async ({ tx, log, project }, o) => {
    const key = entry(o, kind, input[kind]);
    const beforeMember = `before_${kind}`;
    const before = input[beforeMember] === undefined ? undefined : entry(o, kind, input[beforeMember], beforeMember);
    if (before === key) return await changed(ctx, tx, project);
    const { order } = kindOf(kind);
    return await changed(ctx, tx, await saveOptions(tx, log, project, { ...o, [order]: moved(o[order], key, before) }));
  });
}

/**
 * `<kind>s/delete`: one entry (`<kind>`) or several (`<kind>s`, a list; `<kind>` wins when both are
 * sent, as the reference says) go; the `settingRemoved` hooks drop what refers to them in the same
 * transaction. Every key is checked before anything is deleted.
 */
export async function deleteEntry(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  kind: ListKind,
  input: Record<string, unknown>,
): Promise<Answer> {
  const many = `${kind}s`;
  if (input[kind] === undefined && input[many] === undefined) throw missing(kind);
  return await change(ctx, actor, projectGid, async ({ tx, log, project }, o) => {
    const keys =
      input[kind] !== undefined
        ? [entry(o, kind, input[kind])]
        : [...new Set((input[many] as unknown[]).map((k) => entry(o, kind, k, many)))];
    const { dict, order } = kindOf(kind);
    const rest = new Map(Object.entries(o[dict]));
    for (const key of keys) rest.delete(key);
    const p = await saveOptions(tx, log, project, {
      ...o,
      [dict]: Object.fromEntries(rest),
      [order]: o[order].filter((k) => !keys.includes(k)),
    });
    for (const key of keys)
      for (const hook of ctx.hooks.settingRemoved) await hook(ctx, tx, log, projectGid, kind, key);
    return await changed(ctx, tx, p);
  });
}
