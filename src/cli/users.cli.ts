import type { Ctx } from "../platform/context";
import { mutate } from "../db/mutate";
import {
  createPerson,
  findByUsername,
  hasAdmin,
  listUsers,
  hashPassword,
  passwordIssues,
  setPassword,
  updateUser,
} from "../features/users/users.api";
import { stringFlag, UsageError } from "./args";
import { readPassword } from "./password";

/** `apis user create|list|set-password|deactivate|reactivate` for admins. Returns the exit code. */
export async function userCommand(
  ctx: Ctx,
  sub: string | undefined,
  flags: Record<string, string | boolean>,
): Promise<number> {
  const json = flags.json === true;
  switch (sub) {
    case "create": {
      const username = stringFlag(flags, "username", true)!;
      const email = stringFlag(flags, "email", true)!;
      const password = await readPassword(flags);
      const issues = passwordIssues(password);
      if (issues.length) throw new UsageError(`password: ${issues[0]!.message}`);
      const hash = await hashPassword(password);
      // The first account made here on an instance without an admin becomes its admin, as does one with --admin.
      const u = await mutate(ctx.db, ctx.hub, async (tx, log) => {
        const first = !(await hasAdmin(tx));
        const created = await createPerson(tx, log, {
          username,
          email,
          passwordHash: hash,
          name: stringFlag(flags, "name"),
        });
        return first || flags.admin === true ? await updateUser(ctx, tx, log, created.gid, { admin: true }) : created;
      });
      console.log(
        json
          ? JSON.stringify({ gid: u.gid, username: u.username, admin: u.admin })
          : `created user ${u.username} (${u.gid})${u.admin ? ", instance admin" : ""}`,
      );
      return 0;
    }
    case "list": {
      const rows = await listUsers(ctx.db);
      if (json)
        console.log(
          JSON.stringify(
            rows.map((u) => ({
              gid: u.gid,
              kind: u.kind,
              username: u.username,
              email: u.email,
              name: u.name,
              status: u.status,
              admin: u.admin,
            })),
          ),
        );
      else
        for (const u of rows)
          console.log(
            `${u.gid}  ${(u.username ?? (u.kind === "api" ? "(api)" : "(invited)")).padEnd(24)} ${u.email.padEnd(32)} ${u.status}${u.admin ? "  admin" : ""}`,
          );
      return 0;
    }
    case "set-password": {
      const username = stringFlag(flags, "username", true)!;
      const u = await findByUsername(ctx.db, username);
      if (!u) throw new UsageError(`no user ${username}`);
      const password = await readPassword(flags);
      const issues = passwordIssues(password);
      if (issues.length) throw new UsageError(`password: ${issues[0]!.message}`);
      const hash = await hashPassword(password);
      await mutate(ctx.db, ctx.hub, async (tx, log) => await setPassword(ctx, tx, log, u.gid, hash));
      console.log(`password of ${username} changed; its old tokens no longer work`);
      return 0;
    }
    case "deactivate": {
      const username = stringFlag(flags, "username", true)!;
      const u = await findByUsername(ctx.db, username);
      if (!u) throw new UsageError(`no user ${username}`);
      await mutate(
        ctx.db,
        ctx.hub,
        async (tx, log) =>
          await updateUser(ctx, tx, log, u.gid, { status: "inactive", tokenVersion: u.tokenVersion + 1 }),
      );
      console.log(`user ${username} deactivated; its tokens no longer work`);
      return 0;
    }
    case "reactivate": {
      const username = stringFlag(flags, "username", true)!;
      const u = await findByUsername(ctx.db, username);
      if (!u) throw new UsageError(`no user ${username}`);
      if (u.status !== "inactive") throw new UsageError(`user ${username} is ${u.status}, not inactive`);
      await mutate(ctx.db, ctx.hub, async (tx, log) => await updateUser(ctx, tx, log, u.gid, { status: "active" }));
      console.log(`user ${username} reactivated; it can log in again`);
      return 0;
    }
    case "admin": {
      const username = stringFlag(flags, "username", true)!;
      const u = await findByUsername(ctx.db, username);
      if (!u || u.kind !== "person") throw new UsageError(`no user ${username}`);
      const admin = flags.revoke !== true;
      await mutate(ctx.db, ctx.hub, async (tx, log) => await updateUser(ctx, tx, log, u.gid, { admin }));
      console.log(admin ? `user ${username} is an instance admin` : `user ${username} is no longer an instance admin`);
      return 0;
    }
    default:
      throw new UsageError("usage: apis user create|list|set-password|deactivate|reactivate|admin [flags]");
  }
}
