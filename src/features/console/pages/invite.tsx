// The page of an invitation link (/invite?project=..&invitee=..[&action=decline]).
import { useState } from "preact/hooks";
import { account, invitations } from "../api";
import { navigate, notify, reloadSession, session$, useLoad, useLocation, useStore } from "../store";
import { displayName, ErrorNote, Link, Loading, ProjectIcon, useBusy, focusOnMount } from "../ui";

export function InvitePage() {
  const loc = useLocation();
  const q = new URLSearchParams(loc.search);
  const project = q.get("project") ?? "";
  const invitee = q.get("invitee") ?? "";
  const { session } = useStore(session$);
  const inv = useLoad(() => invitations.get(project, invitee), [project, invitee]);
  const [busy, run] = useBusy();
  const [error, setError] = useState<unknown>(null);
  const [declined, setDeclined] = useState(false);
  const here = loc.path + loc.search;
  const data = inv.data;
  const me = session?.user;
  const forMe = !!me && me === invitee;
  const alreadyMember = !!data && data.members.includes(invitee);

  const accept = () =>
    run(async () => {
      setError(null);
      try {
        await account.acceptInvite(project);
        await reloadSession();
        notify(`You joined ${data?.project?.name ?? "the project"}`);
        navigate(`/console/p/${project}/assets`);
      } catch (e) {
        setError(e);
      }
    });
  const decline = () =>
    run(async () => {
      setError(null);
      try {
        if (forMe) await account.declineInvite(project);
        else await invitations.decline(project, invitee);
        setDeclined(true);
        if (session) void reloadSession();
      } catch (e) {
        setError(e);
      }
    });

  return (
    <main class="auth" id="main">
      <div class="auth-card">
        <h1 tabIndex={-1}>Invitation</h1>
        {inv.loading && !data ? <Loading /> : null}
        {inv.error ? <ErrorNote error={inv.error} /> : null}
        {data?.project ? (
          <>
            <div class="row">
              <ProjectIcon project={data.project} size={48} />
              <p>
                <strong>{displayName(data.owner)}</strong> invites you to the project{" "}
                <strong>{data.project.name}</strong>.
              </p>
            </div>
            {declined ? (
              <p role="status">You declined the invitation.</p>
            ) : alreadyMember ? (
              <p>
                You are already a member. <Link href={`/console/p/${project}/assets`}>Open the project</Link>
              </p>
            ) : session && !forMe ? (
              <p class="error">
                This invitation is for another account. Sign out and sign in with the invited account, or ask the owner
                to invite this one.
              </p>
            ) : forMe ? (
              <div class="actions start">
                <button class="btn primary" disabled={busy} onClick={accept}>
                  Accept and open the project
                </button>
                <button class="btn" disabled={busy} onClick={decline}>
                  Decline
                </button>
              </div>
            ) : (
              <>
                <p>Sign in or create an account with the invited address to accept.</p>
                <div class="actions start">
                  <Link class="btn primary" href={`/console/signup?next=${encodeURIComponent(here)}`}>
                    Create an account
                  </Link>
                  <Link class="btn" href={`/?next=${encodeURIComponent(here)}`}>
                    Sign in
                  </Link>
                  <button
                    class="btn"
                    disabled={busy}
                    onClick={decline}
                    ref={q.get("action") === "decline" ? focusOnMount : undefined}
                  >
                    Decline
                  </button>
                </div>
              </>
            )}
          </>
        ) : null}
        <ErrorNote error={error} />
      </div>
    </main>
  );
}
