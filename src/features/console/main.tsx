// The console: a single-page app served by the Apis binary at / and /console/... (see
// console.routes.ts). Pages speak only the public interface through api/ and live.ts.
import { render } from "preact";
import { useEffect, useErrorBoundary } from "preact/hooks";
import type { ComponentChildren } from "preact";
import { AccountPage } from "./pages/account";
import { Reset, SignIn, SignUp } from "./pages/auth";
import { InvitePage } from "./pages/invite";
import { ProjectShell } from "./pages/project";
import { ProjectsPage } from "./pages/projects";
import { boot, liveStatus$, navigate, notifyError, session$, signOut, useLocation, useStore } from "./store";
import { Avatar, ConfirmHost, displayName, Link, Loading, Notices } from "./ui";

function LiveBadge() {
  const status = useStore(liveStatus$);
  const text = status === "live" ? "Live" : status === "connecting" ? "Connecting…" : "Offline";
  return (
    <span
      class={"live-badge " + status}
      title={status === "live" ? "Changes by others appear as they happen" : "Reconnecting to live updates"}
    >
      <span class="dot" aria-hidden="true" />
      {text}
    </span>
  );
}

function TopBar() {
  const { session } = useStore(session$);
  const me = session?.users.get(session.user);
  return (
    <header class="topbar">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <Link href={session ? "/console/projects" : "/"} class="brand">
        Apis
      </Link>
      {session ? (
        <nav class="top-nav" aria-label="Main">
          <Link href="/console/projects">Projects</Link>
          <LiveBadge />
          <Link href="/console/account" class="me" aria-label={`Account of ${displayName(me)}`}>
            <Avatar user={me} size={28} />
            <span class="me-name">{displayName(me)}</span>
          </Link>
          <button type="button" class="btn small" onClick={() => signOut()}>
            Sign out
          </button>
        </nav>
      ) : null}
    </header>
  );
}

/** Any render error becomes a message with a way out, never a blank page. */
function Guard(props: { children: ComponentChildren }) {
  const [error, reset] = useErrorBoundary((e) => console.error(e));
  if (error)
    return (
      <main id="main" class="page">
        <h1>Something went wrong</h1>
        <p class="error" role="alert">
          {error instanceof Error ? error.message : String(error)}
        </p>
        <button type="button" class="btn" onClick={reset}>
          Try again
        </button>
      </main>
    );
  return <>{props.children}</>;
}

function NotFound() {
  return (
    <main id="main" class="page">
      <h1 tabIndex={-1}>Page not found</h1>
      <p>
        <Link href="/console/projects">Go to your projects</Link>
      </p>
    </main>
  );
}

function Routes() {
  const { session, booting } = useStore(session$);
  const loc = useLocation();
  const path = loc.path.replace(/\/+$/, "") || "/";

  // Signed-in users have no use for the sign-in pages, and the landing page is their project list.
  const redirect =
    session && (path === "/" || path === "/console" || path === "/console/signup" || path === "/console/reset")
      ? "/console/projects"
      : null;
  // Console pages ask for a sign in first and come back afterwards.
  const needsLogin =
    !session && !booting && path.startsWith("/console") && !["/console/signup", "/console/reset"].includes(path);
  useEffect(() => {
    if (redirect) navigate(redirect, { replace: true });
    else if (needsLogin && path !== "/console/signin")
      navigate(`/?next=${encodeURIComponent(loc.path + loc.search)}`, { replace: true });
  }, [redirect, needsLogin, path]);

  // Keyboard and screen-reader users land on the new page's heading.
  useEffect(() => {
    const h = document.querySelector<HTMLElement>("main h1");
    if (h && document.activeElement === document.body) h.focus({ preventScroll: true });
  }, [path]);

  if (booting || redirect)
    return (
      <main id="main" class="page">
        <Loading />
      </main>
    );
  if (path === "/invite") return <InvitePage />;
  if (!session) {
    if (path === "/console/signup") return <SignUp />;
    if (path === "/console/reset") return <Reset />;
    return <SignIn />;
  }
  if (path === "/console/projects") return <ProjectsPage />;
  if (path === "/console/account") return <AccountPage />;
  const m = /^\/console\/p\/([0-9a-z]+)(?:\/([a-z]+))?$/.exec(path);
  if (m) return <ProjectShell gid={m[1]!} section={m[2] ?? "assets"} />;
  return <NotFound />;
}

function App() {
  return (
    <>
      <TopBar />
      <Guard>
        <Routes />
      </Guard>
      <Notices />
      <ConfirmHost />
    </>
  );
}

window.addEventListener("unhandledrejection", (e) => notifyError(e.reason));
render(<App />, document.getElementById("app")!);
void boot();
