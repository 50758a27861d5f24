// The people of a project: invitations (send, resend, withdraw), deactivation, removal.
import { useState } from "preact/hooks";
import { membersApi, type Member } from "../api";
import { notify, notifyError, session$, useLive, useLoad, useStore } from "../store";
import { Avatar, confirm, displayName, ErrorNote, Field, issue, Loading, useBusy, useSubmit } from "../ui";
import type { ProjectCtx } from "./project";

const STATUS_TEXT: Record<string, string> = {
  active: "Active",
  inactive: "Deactivated",
  invited: "Invited",
  declined: "Declined",
};

export function MembersPage(props: { ctx: ProjectCtx }) {
  const { gid, isOwner, me } = props.ctx;
  const { session } = useStore(session$);
  const list = useLoad(() => membersApi.list(gid), [gid]);
  useLive(["cc.projects_members", "cc.users"], () => void list.reload());
  // API keys are people of the project too, but have their own page.
  const people = (list.data ?? []).filter((m) => !m.membership.roles.includes("api"));

  return (
    <>
      <h1 tabIndex={-1}>Members</h1>
      {isOwner ? <InviteForm gid={gid} languages={session?.languages ?? []} onDone={list.reload} /> : null}
      {list.error ? <ErrorNote error={list.error} /> : null}
      {list.loading && !list.data ? (
        <Loading />
      ) : (
        <ul class="rows" aria-label="Members">
          {people.map((m) => (
            <MemberRow
              key={m.user.gid}
              member={m}
              gid={gid}
              isOwner={isOwner}
              isMe={m.user.gid === me}
              onChange={list.reload}
            />
          ))}
        </ul>
      )}
    </>
  );
}

function InviteForm(props: { gid: string; languages: [string, string][]; onDone: () => void }) {
  const [email, setEmail] = useState("");
  const [language, setLanguage] = useState("");
  const { busy, error, submit } = useSubmit();
  const invite = submit(async () => {
    const r = await membersApi.invite(props.gid, email.trim(), language || undefined);
    notify(
      r.mailSent
        ? `Invitation sent to ${email.trim()}`
        : `Invitation saved, but the mail could not be sent: try Resend later`,
      r.mailSent ? "info" : "error",
    );
    setEmail("");
    props.onDone();
  });
  return (
    <section class="panel" aria-labelledby="invite-h">
      <h2 id="invite-h">Invite someone</h2>
      <form class="inline-form" onSubmit={invite}>
        <Field label="Email" error={issue(error, "email")}>
          <input
            name="invite-email"
            type="email"
            required
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
        </Field>
        <Field label="Mail language" error={issue(error, "language")}>
          <select name="invite-language" value={language} onChange={(e) => setLanguage(e.currentTarget.value)}>
            <option value="">Same as mine</option>
            {props.languages.map(([code, name]) => (
              <option key={code} value={code}>
                {name}
              </option>
            ))}
          </select>
        </Field>
        <button class="btn primary" type="submit" disabled={busy || !email.trim()}>
          Send invitation
        </button>
      </form>
      <ErrorNote error={error} fields={["email", "language"]} />
    </section>
  );
}

function MemberRow(props: { member: Member; gid: string; isOwner: boolean; isMe: boolean; onChange: () => void }) {
  const { user, membership } = props.member;
  const [busy, run] = useBusy();
  const owner = membership.roles.includes("owner");
  const name = displayName(user);
  const act = (fn: () => Promise<unknown>, done: string) => () =>
    run(async () => {
      try {
        await fn();
        notify(done);
        props.onChange();
      } catch (e) {
        notifyError(e);
      }
    });
  const remove = async (title: string, text: string, action: string, done: string) => {
    if (await confirm({ title, text, action, danger: true }))
      await act(() => membersApi.remove(props.gid, user.gid), done)();
  };
  const canManage = props.isOwner && !owner;
  return (
    <li class="row-item" data-user={user.gid}>
      <Avatar user={user} size={36} />
      <div class="row-main">
        <strong>
          {name}
          {props.isMe ? <span class="muted"> (you)</span> : null}
        </strong>
        <span class="muted">
          {[user.username && user.username !== name ? `@${user.username}` : "", user.email ?? ""]
            .filter(Boolean)
            .join(" · ")}
        </span>
      </div>
      <span class="badge">{owner ? "Owner" : "Member"}</span>
      <span class={"badge status-" + membership.status}>{STATUS_TEXT[membership.status] ?? membership.status}</span>
      {canManage ? (
        <div class="row-actions">
          {membership.status === "invited" ? (
            <>
              <button
                class="btn small"
                disabled={busy}
                onClick={act(
                  () => membersApi.resend(props.gid, user.gid),
                  `Invitation sent again to ${user.email ?? name}`,
                )}
              >
                Resend
              </button>
              <button
                class="btn small"
                disabled={busy}
                onClick={() =>
                  remove(
                    "Withdraw invitation",
                    `Withdraw the invitation of ${user.email ?? name}?`,
                    "Withdraw",
                    "Invitation withdrawn",
                  )
                }
              >
                Withdraw
              </button>
            </>
          ) : null}
          {membership.status === "declined" && user.email ? (
            <button
              class="btn small"
              disabled={busy}
              onClick={act(() => membersApi.invite(props.gid, user.email!), `Invitation sent again to ${user.email}`)}
            >
              Invite again
            </button>
          ) : null}
          {membership.status === "active" ? (
            <button
              key="deactivate"
              class="btn small"
              disabled={busy}
              onClick={act(() => membersApi.deactivate(props.gid, user.gid), `${name} deactivated`)}
            >
              Deactivate
            </button>
          ) : null}
          {membership.status === "inactive" ? (
            <button
              key="reactivate"
              class="btn small"
              disabled={busy}
              onClick={act(() => membersApi.reactivate(props.gid, user.gid), `${name} reactivated`)}
            >
              Reactivate
            </button>
          ) : null}
          {membership.status !== "invited" ? (
            <button
              class="btn small danger"
              disabled={busy}
              onClick={() => remove("Remove member", `Remove ${name} from the project?`, "Remove", `${name} removed`)}
            >
              Remove
            </button>
          ) : null}
        </div>
      ) : null}
    </li>
  );
}
