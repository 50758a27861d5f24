import type { projects } from "./projects.table";

type Project = typeof projects.$inferSelect;

/** Full project form, for the current project or one the caller belongs to. */
export function projectFull(p: Project) {
  return {
    gid: p.gid,
    name: p.name,
    icon: p.icon,
    owner: p.owner,
    status: p.status,
    created_on: p.createdOn,
    updated_on: p.updatedOn,
    last_backed_up: p.lastBackedUp ?? null,
    ...(p.options ?? {}),
  };
}

/** Reduced project form, for other owned projects in a project init. */
export function projectShort(p: Project) {
  return { gid: p.gid, name: p.name, icon: p.icon, owner: p.owner, status: p.status };
}
