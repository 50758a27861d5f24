// The project list: open, create, invitations to answer, deleted projects to bring back or remove.
import { useState } from "preact/hooks";
import { account, projectsApi, type Project } from "../api";
import { navigate, notify, notifyError, reloadSession, session$, useStore } from "../store";
import { confirm, Empty, ErrorNote, Field, issue, Link, ProjectIcon, useBusy } from "../ui";

export function ProjectsPage() {
  const { session } = useStore(session$);
  const [name, setName] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, run] = useBusy();
  if (!session) return null;
  const me = session.user;
  const mine = session.memberships.filter((m) => m.user === me);
  const active = mine.filter((m) => m.status === "active" && session.projects.get(m.project)?.status === "active");
  const invited = mine.filter((m) => m.status === "invited" && session.projects.has(m.project));
  const deleted = [...session.projects.values()].filter((p) => p.status === "deleted" && p.owner === me);

  const create = (e: Event) => {
    e.preventDefault();
    setError(null);
    void run(async () => {
      try {
        const p = await projectsApi.create(name.trim());
        setName("");
        await reloadSession();
        navigate(`/console/p/${p.gid}/assets`);
      } catch (err) {
        setError(err);
      }
    });
  };
  const act = (fn: () => Promise<void>, done: string) => async () => {
    try {
      await fn();
      notify(done);
      await reloadSession();
    } catch (e) {
      notifyError(e);
    }
  };

  return (
    <main id="main" class="page">
      <h1 tabIndex={-1}>Projects</h1>
      {invited.length ? (
        <section aria-labelledby="inv-h">
          <h2 id="inv-h">Invitations</h2>
          <ul class="cards">
            {invited.map((m) => {
              const p = session.projects.get(m.project)!;
              return (
                <li class="card invitation" key={p.gid}>
                  <ProjectIcon project={p} />
                  <div class="card-main">
                    <strong>{p.name}</strong>
                    <span class="muted">You are invited to join</span>
                  </div>
                  <div class="card-actions">
                    <button
                      class="btn primary small"
                      onClick={act(() => account.acceptInvite(p.gid), `You joined ${p.name}`)}
                    >
                      Accept
                    </button>
                    <button
                      class="btn small"
                      onClick={act(() => account.declineInvite(p.gid), `Invitation to ${p.name} declined`)}
                    >
                      Decline
                    </button>
                  </div>
                </li>
              );
            })}
          </ul>
        </section>
      ) : null}

      <section aria-labelledby="proj-h">
        <h2 id="proj-h" class="visually-hidden">
          Your projects
        </h2>
        {active.length ? (
          <ul class="cards">
            {active.map((m) => {
              const p = session.projects.get(m.project)!;
              return (
                <li class="card" key={p.gid}>
                  <ProjectIcon project={p} />
                  <div class="card-main">
                    <Link href={`/console/p/${p.gid}/assets`} class="card-link">
                      {p.name}
                    </Link>
                    <span class="muted">{m.roles.includes("owner") ? "Owner" : "Member"}</span>
                  </div>
                </li>
              );
            })}
          </ul>
        ) : (
          <Empty>No projects yet. Create the first one below.</Empty>
        )}
      </section>

      <section aria-labelledby="new-h" class="panel">
        <h2 id="new-h">New project</h2>
        <form class="inline-form" onSubmit={create}>
          <Field label="Name" error={issue(error, "name")}>
            <input
              name="project-name"
              required
              maxLength={200}
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
            />
          </Field>
          <button class="btn primary" type="submit" disabled={busy || !name.trim()}>
            Create project
          </button>
        </form>
        <ErrorNote error={error} fields={["name"]} />
      </section>

      {deleted.length ? (
        <section aria-labelledby="del-h">
          <h2 id="del-h">Deleted projects</h2>
          <ul class="cards">
            {deleted.map((p: Project) => (
              <li class="card deleted" key={p.gid}>
                <ProjectIcon project={p} />
                <div class="card-main">
                  <strong>{p.name}</strong>
                  <span class="muted">Deleted; restore it or remove it for good</span>
                </div>
                <div class="card-actions">
                  <button class="btn small" onClick={act(() => projectsApi.undelete(p.gid), `${p.name} restored`)}>
                    Restore
                  </button>
                  <button
                    class="btn small danger"
                    onClick={async () => {
                      const ok = await confirm({
                        title: "Delete for good",
                        text: `Every asset, member and backup of ${p.name} is removed. This cannot be undone.`,
                        action: "Delete for good",
                        danger: true,
                        typed: p.name,
                      });
                      if (ok) await act(() => projectsApi.removeForGood(p.gid), `${p.name} deleted for good`)();
                    }}
                  >
                    Delete for good
                  </button>
                </div>
              </li>
            ))}
          </ul>
        </section>
      ) : null}
    </main>
  );
}
