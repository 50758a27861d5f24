import { call, j, upload } from "./http";
import { type Project, type Session, type User, projects, toSession, users } from "./views";

// ---------------------------------------------------------------------------------------------
// Account and session (/api)

export const account = {
  async login(username: string, password: string): Promise<Session> {
    return toSession(await call("/api/login", { username, password }));
  },
  async init(): Promise<Session> {
    return toSession(await call("/api/init"));
  },
  async usernameAvailable(username: string): Promise<{ available: boolean; message?: string }> {
    const r = (await call("/api/username", { username }, { anonymous: true })).result;
    return { available: !!r.available, message: r.validation?.[0]?.message };
  },
  /** Step one of signup: checks everything and mails a code. Returns the validation code. */
  async signupRequest(p: { username: string; email: string; password: string; language?: string }): Promise<string> {
    return (await call("/api/signup_request", j(p), { anonymous: true })).result.validation_code;
  },
  async signup(p: {
    username: string;
    email: string;
    password: string;
    validationCode: string;
    code: string;
  }): Promise<Session> {
    const body = {
      username: p.username,
      email: p.email,
      password: p.password,
      validation_code: p.validationCode,
      verification_code: p.code,
    };
    return toSession(await call("/api/signup", body));
  },
  async resetRequest(usernameOrEmail: string): Promise<string> {
    return (await call("/api/reset_password_request", { username_or_email: usernameOrEmail }, { anonymous: true }))
      .result.validation_code;
  },
  async reset(p: { username: string; password: string; validationCode: string; code: string }): Promise<Session> {
    const body = {
      username: p.username,
      new_password: p.password,
      validation_code: p.validationCode,
      verification_code: p.code,
    };
    return toSession(await call("/api/reset_password", body));
  },
  /** Changes the profile; a new password needs the current one (the answer renews the JWT). */
  async update(p: {
    username?: string;
    name?: string;
    language?: string;
    timezone?: string;
    password?: string;
    currentPassword?: string;
  }): Promise<User> {
    const body: Record<string, unknown> = {};
    if (p.username !== undefined) body.username = p.username;
    if (p.name !== undefined) body.name = p.name;
    if (p.language !== undefined) body.language = p.language;
    if (p.timezone !== undefined) body.timezone = p.timezone;
    if (p.password !== undefined) {
      body.password = p.password;
      body.current_password = p.currentPassword ?? "";
    }
    const env = await call("/api/account/update", body);
    return users(env.data).get(env.result.user)!;
  },
  async emailRequest(email: string): Promise<string> {
    return (await call("/api/account/update_email_request", { email })).result.validation_code;
  },
  async emailChange(email: string, validationCode: string, code: string): Promise<User> {
    const env = await call("/api/account/update_email", {
      email,
      validation_code: validationCode,
      verification_code: code,
    });
    return users(env.data).get(env.result.user)!;
  },
  async uploadAvatar(file: File): Promise<User> {
    const form = new FormData();
    form.append("file", file);
    const env = await upload("/api/account/upload_avatar", form);
    return users(env.data).get(env.result.user)!;
  },
  async deleteAvatar(): Promise<User> {
    const env = await call("/api/account/delete_avatar", {});
    return users(env.data).get(env.result.user)!;
  },
  async acceptInvite(project: string): Promise<void> {
    await call("/api/account/accept_invite", { project });
  },
  async declineInvite(project: string): Promise<void> {
    await call("/api/account/decline_invite", { project });
  },
  async leaveProject(project: string): Promise<void> {
    await call("/api/account/leave_project", { project });
  },
  async deleteAccount(): Promise<void> {
    await call("/api/account/delete", { confirm: true });
  },
};

export type Invitation = {
  invitee: User | undefined;
  project: Project | undefined;
  owner: User | undefined;
  members: string[];
};

export const invitations = {
  /** What an invitation link names; works without a login. */
  async get(project: string, invitee: string): Promise<Invitation> {
    const env = await call("/api/init_invite", { project, invitee }, { anonymous: true });
    const us = users(env.data);
    const p = projects(env.data).get(env.result.project);
    return {
      invitee: us.get(env.result.invitee),
      project: p,
      owner: p ? us.get(p.owner) : undefined,
      members: env.result.project_members ?? [],
    };
  },
  async decline(project: string, invitee: string): Promise<void> {
    await call("/api/decline_invite", { project, invitee }, { anonymous: true });
  },
};
