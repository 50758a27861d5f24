// Signing in, signing up and resetting a password (both with a mailed code).
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { account, ApiError } from "../api";
import { navigate, signedIn, useLocation } from "../store";
import { ErrorNote, Field, issue, Link, focusOnMount } from "../ui";

/** Where to go after signing in: `?next=` when it is a console address, else the projects. */
function nextPath(search: string): string {
  const next = new URLSearchParams(search).get("next");
  return next && /^\/(console|invite)([/?]|$)/.test(next) ? next : "/console/projects";
}

function withNext(path: string, search: string): string {
  const next = new URLSearchParams(search).get("next");
  return next ? `${path}?next=${encodeURIComponent(next)}` : path;
}

function Card(props: { title: string; children: ComponentChildren }) {
  return (
    <main class="auth" id="main">
      <div class="auth-card">
        <div class="brand-big" aria-hidden="true">
          Apis
        </div>
        <h1 tabIndex={-1}>{props.title}</h1>
        {props.children}
      </div>
    </main>
  );
}

export function SignIn() {
  const loc = useLocation();
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      signedIn(await account.login(username.trim(), password));
      navigate(nextPath(loc.search), { replace: true });
    } catch (err) {
      setError(err instanceof ApiError && err.code === 403 ? new Error("Wrong username or password") : err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Card title="Sign in">
      <form onSubmit={submit} class="stack">
        <Field label="Username">
          <input
            name="username"
            autoComplete="username"
            required
            value={username}
            onInput={(e) => setUsername(e.currentTarget.value)}
            ref={focusOnMount}
          />
        </Field>
        <Field label="Password">
          <input
            name="password"
            type="password"
            autoComplete="current-password"
            required
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </Field>
        <ErrorNote error={error} />
        <button class="btn primary" type="submit" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
      <p class="auth-links">
        <Link href={withNext("/console/signup", loc.search)}>Create an account</Link>
        <Link href={withNext("/console/reset", loc.search)}>Forgot your password?</Link>
      </p>
    </Card>
  );
}

/** The second step of a mailed-code flow: the 6-character code. */
function CodeField(props: { value: string; onInput: (v: string) => void; error?: string; to: string }) {
  return (
    <Field
      label="Code from the mail"
      error={props.error}
      hint={`We sent a 6-character code to ${props.to}. It is valid for 15 minutes.`}
    >
      <input
        name="code"
        autoComplete="one-time-code"
        inputMode="text"
        required
        maxLength={12}
        value={props.value}
        onInput={(e) => props.onInput(e.currentTarget.value)}
        ref={focusOnMount}
        class="code-input"
      />
    </Field>
  );
}

export function SignUp() {
  const loc = useLocation();
  const params = new URLSearchParams(loc.search);
  const [form, setForm] = useState({ username: "", email: params.get("email") ?? "", password: "" });
  const [validation, setValidation] = useState<string | null>(null);
  const [code, setCode] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const set = (k: keyof typeof form) => (e: Event) =>
    setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value });

  const request = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const language = navigator.language?.toLowerCase();
      setValidation(
        await account.signupRequest({
          username: form.username.trim(),
          email: form.email.trim(),
          password: form.password,
          language: language?.startsWith("de") ? "de" : undefined,
        }),
      );
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const finish = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      signedIn(
        await account.signup({
          username: form.username.trim(),
          email: form.email.trim(),
          password: form.password,
          validationCode: validation!,
          code,
        }),
      );
      navigate(nextPath(loc.search), { replace: true });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  if (validation)
    return (
      <Card title="Check your mail">
        <form onSubmit={finish} class="stack">
          <CodeField
            value={code}
            onInput={setCode}
            error={issue(error, "verification_code") ?? issue(error, "validation_code")}
            to={form.email}
          />
          <ErrorNote error={error} fields={["verification_code", "validation_code"]} />
          <button class="btn primary" type="submit" disabled={busy}>
            {busy ? "Creating…" : "Create account"}
          </button>
          <button class="btn link" type="button" onClick={() => setValidation(null)}>
            Back
          </button>
        </form>
      </Card>
    );
  return (
    <Card title="Create an account">
      <form onSubmit={request} class="stack">
        <Field label="Username" error={issue(error, "username")} hint="3 to 64 letters, digits or . _ - @ +">
          <input
            name="username"
            autoComplete="username"
            required
            value={form.username}
            onInput={set("username")}
            ref={focusOnMount}
          />
        </Field>
        <Field label="Email" error={issue(error, "email")}>
          <input name="email" type="email" autoComplete="email" required value={form.email} onInput={set("email")} />
        </Field>
        <Field label="Password" error={issue(error, "password")} hint="At least 8 characters, with a digit or a symbol">
          <input
            name="password"
            type="password"
            autoComplete="new-password"
            required
            value={form.password}
            onInput={set("password")}
          />
        </Field>
        <ErrorNote error={error} fields={["username", "email", "password"]} />
        <button class="btn primary" type="submit" disabled={busy}>
          {busy ? "Sending…" : "Send me a code"}
        </button>
      </form>
      <p class="auth-links">
        <Link href={withNext("/", loc.search)}>I have an account</Link>
      </p>
    </Card>
  );
}

export function Reset() {
  const loc = useLocation();
  const [who, setWho] = useState("");
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [validation, setValidation] = useState<string | null>(null);
  const [code, setCode] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const request = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      setValidation(await account.resetRequest(who.trim()));
      if (!who.includes("@")) setUsername(who.trim());
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const finish = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      signedIn(await account.reset({ username: username.trim(), password, validationCode: validation!, code }));
      navigate(nextPath(loc.search), { replace: true });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  if (validation)
    return (
      <Card title="Choose a new password">
        <form onSubmit={finish} class="stack">
          <CodeField
            value={code}
            onInput={setCode}
            error={issue(error, "verification_code") ?? issue(error, "validation_code")}
            to={who.includes("@") ? who : "the account's address"}
          />
          <Field label="Username" hint="The mail lists the accounts of the address">
            <input
              name="username"
              autoComplete="username"
              required
              value={username}
              onInput={(e) => setUsername(e.currentTarget.value)}
            />
          </Field>
          <Field
            label="New password"
            error={issue(error, "new_password")}
            hint="At least 8 characters, with a digit or a symbol"
          >
            <input
              name="new_password"
              type="password"
              autoComplete="new-password"
              required
              value={password}
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          </Field>
          <ErrorNote error={error} fields={["verification_code", "validation_code", "new_password"]} />
          <button class="btn primary" type="submit" disabled={busy}>
            {busy ? "Saving…" : "Set password and sign in"}
          </button>
        </form>
      </Card>
    );
  return (
    <Card title="Reset your password">
      <form onSubmit={request} class="stack">
        <Field label="Username or email" error={issue(error, "email") ?? issue(error, "username")}>
          <input
            name="who"
            autoComplete="username"
            required
            value={who}
            onInput={(e) => setWho(e.currentTarget.value)}
            ref={focusOnMount}
          />
        </Field>
        <ErrorNote error={error} fields={["email", "username"]} />
        <button class="btn primary" type="submit" disabled={busy}>
          {busy ? "Sending…" : "Send me a code"}
        </button>
      </form>
      <p class="auth-links">
        <Link href={withNext("/", loc.search)}>Back to sign in</Link>
      </p>
    </Card>
  );
}
