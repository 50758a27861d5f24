import type { Tx } from "../../db/connection";
import type { Ctx } from "../../platform/context";
import { projectOptions } from "./projects.options";
import type { projects } from "./projects.table";

type Project = typeof projects.$inferSelect;
/** The columns of the short form. */
export type ProjectHead = Pick<Project, "gid" | "name" | "icon" | "owner" | "status">;

/**
 * The full project form (the reference's complete form), for the current project and every
 * `/api/projects/*` answer: the short members plus the normalized `options` (time zone, languages,
 * channels, orderings, fieldlists, image server, the ordered lists), the members other features
 * add (`hooks.projectForm`: the backups feature's `backups`) and `build`.
 */
export function projectFull(ctx: Pick<Ctx, "hooks">, tx: Tx, p: Project) {
  const form: Record<string, unknown> = { ...projectShort(p), options: projectOptions(p) };
  for (const members of ctx.hooks.projectForm) Object.assign(form, members(tx, p));
  form.build = 1;
  return form;
}

/**
 * The reduced form, for the caller's other projects. `icon` is the file name or "" when none: the
 * spec shows it as a string (the reference answers null; docs/compat.md).
 */
export function projectShort(p: ProjectHead) {
  return { gid: p.gid, name: p.name, icon: p.icon, owner: p.owner, status: p.status };
}
