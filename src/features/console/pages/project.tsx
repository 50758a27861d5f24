// One project: its navigation, live subscription and settings.
import type { FunctionComponent } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { account, ApiError, projectsApi, type Project } from "../api";
import { live } from "../live";
import { navigate, notify, notifyError, reloadSession, session$, useLoad, useLive, useStore } from "../store";
import { confirm, ErrorNote, Field, issue, Link, Loading, ProjectIcon, useSubmit } from "../ui";
import { ApiKeysPage } from "./apikeys";
import { AssetsPage } from "./assets";
import { BackupsPage } from "./backups";
import { MembersPage } from "./members";
import { ProjectSettings } from "./settings";

/** A project the user is leaving on purpose: losing its subscription is then no surprise. */
let leaving: string | null = null;

export type ProjectCtx = {
  gid: string;
  project: Project;
  isOwner: boolean;
  me: string;
  /** Shows a change's answer (the project as it now is) at once: see `Loaded.settle`. */
  settle: (project: Project) => void;
};

/**
 * Pages served in a bundle of their own (the schema and records pages: pages/records/records.html
 * at /console/p/<project>/schema and /records), registered here by that bundle's entry before the
 * app starts.
 * Bun's HTML bundler does not split a dynamic import() into a chunk of its own, so this is how
 * the first page's bundle stays small: the other bundle holds the whole app plus those pages.
 */
export const separatePages = new Map<string, FunctionComponent<{ ctx: ProjectCtx }>>();

function bundledApart(name: string): FunctionComponent<{ ctx: ProjectCtx }> {
  return (props) => {
    const Page = separatePages.get(name);
    // Reached by a link inside this bundle: load the address again, which serves the other bundle.
    const reloaded =
      (performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming | undefined)?.type === "reload";
    useEffect(() => {
      if (!Page && !reloaded) window.location.reload();
    }, [Page]);
    if (Page) return <Page ctx={props.ctx} />;
    return reloaded ? (
      <p class="error" role="alert">
        This page could not be loaded. Please try again later.
      </p>
    ) : (
      <Loading />
    );
  };
}

type Section = { path: string; label: string; ownerOnly?: boolean; page: FunctionComponent<{ ctx: ProjectCtx }> };

/**
 * The project's pages, in navigation order. The schema and records pages come with the second
 * bundle (see separatePages).
 */
const SECTIONS: Section[] = [
  { path: "records", label: "Records", page: bundledApart("records") },
  { path: "assets", label: "Assets", page: AssetsPage },
  { path: "schema", label: "Schema", page: bundledApart("schema") },
  { path: "members", label: "Members", page: MembersPage },
  { path: "apikeys", label: "API keys", ownerOnly: true, page: ApiKeysPage },
  { path: "backups", label: "Backups", ownerOnly: true, page: BackupsPage },
  { path: "settings", label: "Settings", page: SettingsPage },
];

export function ProjectShell(props: { gid: string; section: string }) {
  const { session } = useStore(session$);
  const gid = props.gid;
  const state = useLoad(() => projectsApi.init(gid), [gid]);
  const [menuOpen, setMenuOpen] = useState(false);

  // Follow this project's sync items from the cursor of its init; stop when leaving it.
  useEffect(() => {
    if (state.data?.cursor != null) live.follow({ gid, cursor: state.data.cursor });
  }, [gid, state.data?.cursor]);
  useEffect(() => () => live.follow(null), [gid]);
  // Access ends while the page is open: the server ends the subscription, or, before the page
  // follows the project (its init still on the way), the init is refused. Either way the page
  // says so and goes back to the list. A project that was never on the user's list keeps the
  // error page below (an address typed or shared by someone else).
  const listed = useRef<string | null>(null);
  if (session?.projects.has(gid)) listed.current = gid;
  const lost = () => {
    if (leaving === gid) return;
    notify("You no longer have access to this project", "error");
    navigate("/console/projects");
  };
  useEffect(() => live.onLost((project) => project === gid && lost()), [gid]);
  const refused = state.error instanceof ApiError && state.error.code === 403;
  useEffect(() => {
    if (refused && listed.current === gid) lost();
  }, [refused, gid]);
  useLive(["cc.projects"], (items) => {
    if (items.some((i) => i.key === gid)) void state.reload();
  });

  if (state.error && !state.data)
    return (
      <main id="main" class="page">
        <h1 tabIndex={-1}>Project</h1>
        <p class="error" role="alert">
          {state.error instanceof ApiError && state.error.code === 403
            ? "You are not a member of this project."
            : state.error.message}
        </p>
        <Link href="/console/projects">Back to your projects</Link>
      </main>
    );
  const project = state.data?.project ?? session?.projects.get(gid);
  if (!project || !session)
    return (
      <main id="main" class="page">
        <Loading />
      </main>
    );
  const isOwner = project.owner === session.user;
  const ctx: ProjectCtx = {
    gid,
    project,
    isOwner,
    me: session.user,
    settle: (p) => state.settle((d) => ({ ...d, project: p })),
  };
  const sections = SECTIONS.filter((s) => !s.ownerOnly || isOwner);
  const current = sections.find((s) => s.path === props.section);
  const Page = current?.page;

  return (
    <div class="project-layout">
      <nav class={"project-nav" + (menuOpen ? " open" : "")} aria-label="Project">
        <div class="project-title">
          <ProjectIcon project={project} size={32} />
          <span class="project-name" data-testid="project-name">
            {project.name}
          </span>
          {/* Phones: the sections fold into this menu. */}
          <button
            type="button"
            class="btn small menu-btn"
            aria-expanded={menuOpen}
            aria-controls="project-sections"
            onClick={() => setMenuOpen((o) => !o)}
          >
            {current ? `${current.label} ▾` : "Menu ▾"}
          </button>
        </div>
        <ul id="project-sections" onClick={() => setMenuOpen(false)}>
          {sections.map((s) => (
            <li key={s.path}>
              <Link href={`/console/p/${gid}/${s.path}`} aria-current={s === current ? "page" : undefined}>
                {s.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" class="page project-page">
        {project.status === "deleted" ? <DeletedBanner project={project} onChange={state.reload} /> : null}
        {Page ? (
          <Page ctx={ctx} />
        ) : (
          <>
            <h1 tabIndex={-1}>Page not found</h1>
            <Link href={`/console/p/${gid}/assets`}>Go to the assets</Link>
          </>
        )}
      </main>
    </div>
  );
}

function DeletedBanner(props: { project: Project; onChange: () => void }) {
  return (
    <div class="banner" role="status">
      This project is deleted. Only you, its owner, can still see it.
      <button
        class="btn small"
        onClick={async () => {
          try {
            await projectsApi.undelete(props.project.gid);
            notify(`${props.project.name} restored`);
            props.onChange();
            void reloadSession();
          } catch (e) {
            notifyError(e);
          }
        }}
      >
        Restore
      </button>
    </div>
  );
}

function SettingsPage(props: { ctx: ProjectCtx }) {
  const { project, isOwner, gid } = props.ctx;
  const [name, setName] = useState(project.name);
  const { busy, error, submit, act } = useSubmit();
  const fileRef = useRef<HTMLInputElement>(null);
  useEffect(() => setName(project.name), [project.name]);

  const rename = submit(async () => {
    await projectsApi.rename(gid, name.trim());
    notify("Project renamed");
  });
  const icon = (file: File | undefined) =>
    file &&
    act(async () => {
      try {
        await projectsApi.uploadIcon(gid, file);
        notify("Icon changed");
      } finally {
        if (fileRef.current) fileRef.current.value = "";
      }
    });

  return (
    <>
      <h1 tabIndex={-1}>Settings</h1>
      {isOwner ? (
        <>
          <section class="panel" aria-labelledby="name-h">
            <h2 id="name-h">Name</h2>
            <form class="inline-form" onSubmit={rename}>
              <Field label="Project name" error={issue(error, "name")}>
                <input
                  name="project-name"
                  required
                  maxLength={200}
                  value={name}
                  onInput={(e) => setName(e.currentTarget.value)}
                />
              </Field>
              <button class="btn primary" type="submit" disabled={busy || !name.trim() || name.trim() === project.name}>
                Rename
              </button>
            </form>
            <ErrorNote error={error} fields={["name"]} />
          </section>
          <section class="panel" aria-labelledby="icon-h">
            <h2 id="icon-h">Icon</h2>
            <div class="row">
              <ProjectIcon project={project} size={64} />
              <label class="btn">
                Upload an image
                <input
                  ref={fileRef}
                  type="file"
                  accept="image/*"
                  class="visually-hidden"
                  onChange={(e) => icon(e.currentTarget.files?.[0])}
                />
              </label>
              {project.icon ? (
                <button
                  class="btn"
                  disabled={busy}
                  onClick={() => act(() => projectsApi.deleteIcon(gid).then(() => notify("Icon removed")))}
                >
                  Remove icon
                </button>
              ) : null}
            </div>
          </section>
          <ProjectSettings project={project} onChange={props.ctx.settle} />
          {project.status === "active" ? (
            <section class="panel danger-zone" aria-labelledby="del-h">
              <h2 id="del-h">Delete the project</h2>
              <p>
                Members lose access at once. You can restore it from your project list until you delete it for good.
              </p>
              <button
                class="btn danger"
                onClick={async () => {
                  const ok = await confirm({
                    title: "Delete project",
                    text: `Delete ${project.name}? Members lose access.`,
                    action: "Delete project",
                    danger: true,
                  });
                  if (!ok) return;
                  try {
                    await projectsApi.remove(gid);
                    notify(`${project.name} deleted`);
                    await reloadSession();
                    navigate("/console/projects");
                  } catch (e) {
                    notifyError(e);
                  }
                }}
              >
                Delete project
              </button>
            </section>
          ) : null}
        </>
      ) : (
        <>
          <ProjectSettings project={project} onChange={props.ctx.settle} />
          <section class="panel" aria-labelledby="leave-h">
            <h2 id="leave-h">Leave the project</h2>
            <p>You lose access to {project.name} until its owner invites you again.</p>
            <button
              class="btn danger"
              onClick={async () => {
                const ok = await confirm({
                  title: "Leave project",
                  text: `Leave ${project.name}?`,
                  action: "Leave",
                  danger: true,
                });
                if (!ok) return;
                try {
                  leaving = gid;
                  await account.leaveProject(gid);
                  notify(`You left ${project.name}`);
                  await reloadSession();
                  navigate("/console/projects");
                } catch (e) {
                  notifyError(e);
                } finally {
                  leaving = null;
                }
              }}
            >
              Leave project
            </button>
          </section>
        </>
      )}
    </>
  );
}
