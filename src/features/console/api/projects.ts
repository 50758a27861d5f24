import { type Envelope, call, p, upload } from "./http";
import {
  type ApiKey,
  type Backup,
  type Job,
  type Membership,
  type Project,
  type ProjectState,
  type User,
  entries,
  memberships,
  projects,
  toApiKey,
  toBackup,
  toJob,
  users,
} from "./views";

// ---------------------------------------------------------------------------------------------
// Projects (/api/projects, /api/p/<project>)

async function projectOf(env: Envelope): Promise<Project | undefined> {
  return projects(env.data).get(env.result.project);
}

export const projectsApi = {
  async create(name: string, timezone?: string): Promise<Project> {
    return (await projectOf(await call("/api/projects/create", timezone ? { name, timezone } : { name })))!;
  },
  async rename(project: string, name: string): Promise<Project> {
    return (await projectOf(await call("/api/projects/update", { project, name })))!;
  },
  async setTimezone(project: string, timezone: string): Promise<Project> {
    return (await projectOf(await call("/api/projects/update", { project, timezone })))!;
  },
  async uploadIcon(project: string, file: File): Promise<Project> {
    const form = new FormData();
    form.append("project", project);
    form.append("file", file);
    return (await projectOf(await upload("/api/projects/upload_icon", form)))!;
  },
  async deleteIcon(project: string): Promise<Project> {
    return (await projectOf(await call("/api/projects/delete_icon", { project })))!;
  },
  async remove(project: string): Promise<void> {
    await call("/api/projects/delete", { project });
  },
  async undelete(project: string): Promise<void> {
    await call("/api/projects/undelete", { project });
  },
  async removeForGood(project: string): Promise<void> {
    await call("/api/projects/permanent_delete", { project });
  },
  /** The project init payload: the project, its people, its cursor. */
  async init(project: string): Promise<ProjectState> {
    const env = await call(`/api/p/${project}/init`);
    return {
      project: env.result.project ? (projects(env.data).get(env.result.project) ?? null) : null,
      cursor: env.result.cursor ?? null,
      ccCursor: env.result["cc.cursor"] ?? 0,
      members: env.result.project_members ?? [],
      users: users(env.data),
      memberships: memberships(env.data),
    };
  },
};

export type Member = { user: User; membership: Membership };

export const membersApi = {
  async list(project: string): Promise<Member[]> {
    const env = await call(p(project, "members/get"), {});
    const us = users(env.data);
    const ms = new Map(memberships(env.data).map((m) => [m.user, m]));
    return ((env.result.users ?? []) as string[])
      .filter((g) => us.has(g) && ms.has(g))
      .map((g) => ({ user: us.get(g)!, membership: ms.get(g)! }));
  },
  async invite(project: string, email: string, language?: string): Promise<{ user: string; mailSent: boolean }> {
    const r = (await call(p(project, "members/invite"), language ? { email, language } : { email })).result;
    return { user: r.user, mailSent: !!r.mail_sent };
  },
  async resend(project: string, user: string): Promise<boolean> {
    return !!(await call(p(project, "members/resend_invite"), { user })).result.mail_sent;
  },
  async deactivate(project: string, user: string) {
    await call(p(project, "members/deactivate"), { user });
  },
  async reactivate(project: string, user: string) {
    await call(p(project, "members/reactivate"), { user });
  },
  /** Removes a member, or withdraws an invitation. */
  async remove(project: string, user: string) {
    await call(p(project, "members/remove"), { user });
  },
};

export const apiKeysApi = {
  async list(project: string): Promise<ApiKey[]> {
    const env = await call(p(project, "apikeys/get"), {});
    const dict = new Map(entries(env.result["apikeys.info"]).map(([k, v]) => [k, toApiKey({ ...v, user: k })]));
    return ((env.result.apikeys ?? []) as string[]).map((g) => dict.get(g)).filter((k): k is ApiKey => !!k);
  },
  /** Creates a key; the key itself is in this answer only. */
  async create(project: string, name: string, rateLimit: number | null): Promise<{ user: string; key: string }> {
    const r = (await call(p(project, "apikeys/create"), { name, rate_limit_per_second: rateLimit })).result;
    return { user: r.user, key: r.apikey };
  },
  async update(project: string, user: string, changes: { name?: string; rateLimit?: number | null }) {
    const body: Record<string, unknown> = { user };
    if (changes.name !== undefined) body.name = changes.name;
    if (changes.rateLimit !== undefined) body.rate_limit_per_second = changes.rateLimit;
    await call(p(project, "apikeys/update"), body);
  },
  async deactivate(project: string, user: string) {
    await call(p(project, "apikeys/deactivate"), { user });
  },
  async reactivate(project: string, user: string) {
    await call(p(project, "apikeys/reactivate"), { user });
  },
  async remove(project: string, user: string) {
    await call(p(project, "apikeys/delete"), { user });
  },
};

export const backupsApi = {
  /** Every backup of the project with its details (being written and failed ones too), newest first. */
  async list(project: string): Promise<Backup[]> {
    const env = await call(p(project, "backups/get"), {});
    return (Array.isArray(env.result.backups) ? env.result.backups : []).map(toBackup);
  },
  /** Starts a backup (`createdBy`: who makes it); answers its version and the job token to follow. */
  async create(
    project: string,
    b: { createdBy: string; name?: string; notes?: string },
  ): Promise<{ version: number; job: string }> {
    const body: Record<string, string> = { created_by: b.createdBy };
    if (b.name?.trim()) body.name = b.name.trim();
    if (b.notes?.trim()) body.notes = b.notes;
    const r = (await call(p(project, "backups/create"), body)).result;
    return { version: r.version, job: r["job.token"] };
  },
  /** Starts a restore; answers the job token. */
  async restore(project: string, version: number): Promise<string> {
    return (await call(p(project, "backups/restore"), { version })).result["job.token"];
  },
  async remove(project: string, version: number) {
    await call(p(project, "backups/delete"), { version });
  },
};

export type SettingKind = "channel" | "ordering" | "fieldlist";
const SETTING_PATHS: Record<SettingKind, string> = {
  channel: "channels",
  ordering: "orderings",
  fieldlist: "fieldlists",
};

/** The project settings (docs/settings.md); every call answers the changed project. */
export const settingsApi = {
  async addLanguage(project: string, language: string): Promise<Project> {
    return (await projectOf(await call(p(project, "languages/add"), { language })))!;
  },
  /** Places a language before another (null: at the end); the first is the main language. */
  async moveLanguage(project: string, language: string, before: string | null): Promise<Project> {
    return (await projectOf(
      await call(p(project, "languages/move"), before ? { language, before_language: before } : { language }),
    ))!;
  },
  /** Removes a language; its values are kept (hidden) unless `removeValues` confirms deleting them. */
  async removeLanguage(
    project: string,
    language: string,
    removeValues: boolean,
  ): Promise<{ project: Project; removedValues: number }> {
    const env = await call(
      p(project, "languages/remove"),
      removeValues ? { language, remove_values: true } : { language },
    );
    return {
      project: (await projectOf(env))!,
      removedValues: typeof env.result.removed_values === "number" ? env.result.removed_values : 0,
    };
  },
  async create(project: string, kind: SettingKind, name: string): Promise<{ key: string; project: Project }> {
    const env = await call(p(project, `${SETTING_PATHS[kind]}/create`), { name });
    return { key: env.result[kind], project: (await projectOf(env))! };
  },
  async rename(project: string, kind: SettingKind, key: string, name: string): Promise<Project> {
    return (await projectOf(await call(p(project, `${SETTING_PATHS[kind]}/update`), { [kind]: key, name })))!;
  },
  /** Places an entry before another (null: at the end). */
  async move(project: string, kind: SettingKind, key: string, before: string | null): Promise<Project> {
    const body: Record<string, string> = { [kind]: key };
    if (before) body[`before_${kind}`] = before;
    return (await projectOf(await call(p(project, `${SETTING_PATHS[kind]}/move`), body)))!;
  },
  async remove(project: string, kind: SettingKind, key: string): Promise<Project> {
    return (await projectOf(await call(p(project, `${SETTING_PATHS[kind]}/delete`), { [kind]: key })))!;
  },
};

export const jobsApi = {
  async get(project: string | null, tokenOfJob: string): Promise<Job> {
    const env = await call(project ? p(project, "jobs/get") : "/api/jobs/get", { token: tokenOfJob });
    return toJob(tokenOfJob, env.result.job);
  },
};
