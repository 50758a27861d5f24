// The signed-in person: profile, avatar, email address, memberships, deleting the account.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { account, ApiError, type Project, type Session, type User } from "../api";
import { notify, notifyError, reloadSession, session$, signOut, useStore } from "../store";
import { Avatar, confirm, ErrorNote, Field, issue, Link, useBusy, focusOnMount } from "../ui";

export function AccountPage() {
  const { session } = useStore(session$);
  if (!session) return null;
  const me = session.users.get(session.user)!;
  return (
    <main id="main" class="page">
      <h1 tabIndex={-1}>Your account</h1>
      <Profile me={me} languages={session.languages} />
      <AvatarPanel me={me} />
      <EmailPanel me={me} />
      <Memberships session={session} />
      <DeletePanel
        me={me}
        owned={[...session.projects.values()].filter((p) => p.owner === session.user && p.status === "active")}
      />
    </main>
  );
}

function timezones(): string[] {
  try {
    return (Intl as unknown as { supportedValuesOf(k: string): string[] }).supportedValuesOf("timeZone");
  } catch {
    return ["UTC"];
  }
}

function Profile(props: { me: User; languages: [string, string][] }) {
  const { me } = props;
  // The profile as saved (a language or time zone never set shows as the default).
  const savedLanguage = me.language ?? "en";
  const savedTimezone = me.timezone ?? "UTC";
  const [name, setName] = useState(me.name);
  const [language, setLanguage] = useState(savedLanguage);
  const [timezone, setTimezone] = useState(savedTimezone);
  const [error, setError] = useState<unknown>(null);
  const [busy, run] = useBusy();
  const zones = useMemo(() => {
    const z = timezones();
    return z.includes(timezone) ? z : [timezone, ...z];
  }, []);
  useEffect(() => {
    setName(me.name);
    setLanguage(savedLanguage);
    setTimezone(savedTimezone);
  }, [me.name, savedLanguage, savedTimezone]);
  // Nothing to save until something differs from the profile as saved.
  const changed = name.trim() !== me.name || language !== savedLanguage || timezone !== savedTimezone;
  return (
    <section class="panel" aria-labelledby="profile-h">
      <h2 id="profile-h">Profile</h2>
      <form
        class="grid-form"
        onSubmit={(e) => {
          e.preventDefault();
          setError(null);
          void run(async () => {
            try {
              await account.update({ name: name.trim(), language, timezone });
              notify("Profile saved");
              void reloadSession();
            } catch (err) {
              setError(err);
            }
          });
        }}
      >
        <Field label="Name" error={issue(error, "name")}>
          <input
            name="name"
            maxLength={200}
            autoComplete="name"
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </Field>
        <Field label="Language" error={issue(error, "language")}>
          <select name="language" value={language} onChange={(e) => setLanguage(e.currentTarget.value)}>
            {props.languages.map(([code, n]) => (
              <option key={code} value={code}>
                {n}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Time zone" error={issue(error, "timezone")}>
          <select name="timezone" value={timezone} onChange={(e) => setTimezone(e.currentTarget.value)}>
            {zones.map((z) => (
              <option key={z} value={z}>
                {z}
              </option>
            ))}
          </select>
        </Field>
        {/* The server names these issues as the members sent: language, timezone (docs/account.md). */}
        <ErrorNote error={error} fields={["name", "language", "timezone"]} />
        <div class="actions start">
          <button class="btn primary" type="submit" disabled={busy || !changed}>
            Save profile
          </button>
        </div>
      </form>
      <p class="muted">Username: {me.username}</p>
    </section>
  );
}

function AvatarPanel(props: { me: User }) {
  const [busy, run] = useBusy();
  const input = useRef<HTMLInputElement>(null);
  return (
    <section class="panel" aria-labelledby="avatar-h">
      <h2 id="avatar-h">Picture</h2>
      <div class="row">
        <Avatar user={props.me} size={64} />
        <label class="btn">
          Upload a picture
          <input
            ref={input}
            type="file"
            accept="image/*"
            class="visually-hidden"
            name="avatar"
            onChange={(e) => {
              const f = e.currentTarget.files?.[0];
              if (f)
                void run(() =>
                  account
                    .uploadAvatar(f)
                    .then(() => (notify("Picture changed"), reloadSession()), notifyError)
                    .finally(() => input.current && (input.current.value = "")),
                );
            }}
          />
        </label>
        {props.me.avatar ? (
          <button
            class="btn"
            disabled={busy}
            onClick={() =>
              run(() => account.deleteAvatar().then(() => (notify("Picture removed"), reloadSession()), notifyError))
            }
          >
            Remove picture
          </button>
        ) : null}
      </div>
    </section>
  );
}

function EmailPanel(props: { me: User }) {
  const [email, setEmail] = useState("");
  const [validation, setValidation] = useState<string | null>(null);
  const [code, setCode] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, run] = useBusy();
  const reset = () => {
    setValidation(null);
    setCode("");
    setEmail("");
    setError(null);
  };
  return (
    <section class="panel" aria-labelledby="email-h">
      <h2 id="email-h">Email address</h2>
      <p>
        Current address: <strong>{props.me.email}</strong>
      </p>
      {validation ? (
        <form
          class="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            setError(null);
            void run(async () => {
              try {
                await account.emailChange(email.trim(), validation, code);
                notify("Email address changed");
                reset();
                void reloadSession();
              } catch (err) {
                setError(err);
              }
            });
          }}
        >
          <Field
            label={`Code sent to ${email.trim()}`}
            error={issue(error, "verification_code") ?? issue(error, "validation_code")}
          >
            <input
              name="email-code"
              autoComplete="one-time-code"
              required
              value={code}
              onInput={(e) => setCode(e.currentTarget.value)}
              ref={focusOnMount}
            />
          </Field>
          <button class="btn primary" type="submit" disabled={busy}>
            Confirm
          </button>
          <button class="btn" type="button" onClick={reset}>
            Cancel
          </button>
        </form>
      ) : (
        <form
          class="inline-form"
          onSubmit={(e) => {
            e.preventDefault();
            setError(null);
            void run(async () => {
              try {
                setValidation(await account.emailRequest(email.trim()));
              } catch (err) {
                setError(err);
              }
            });
          }}
        >
          <Field label="New address" error={issue(error, "email")}>
            <input
              name="new-email"
              type="email"
              required
              autoComplete="email"
              value={email}
              onInput={(e) => setEmail(e.currentTarget.value)}
            />
          </Field>
          <button class="btn" type="submit" disabled={busy || !email.trim()}>
            Send a code
          </button>
        </form>
      )}
      <ErrorNote error={error} fields={["email", "verification_code", "validation_code"]} />
    </section>
  );
}

function Memberships(props: { session: Session }) {
  const s = props.session;
  const mine = s.memberships.filter(
    (m) => m.user === s.user && s.projects.has(m.project) && (m.status === "active" || m.status === "invited"),
  );
  const act = (fn: () => Promise<void>, done: string) => async () => {
    try {
      await fn();
      notify(done);
      void reloadSession();
    } catch (e) {
      notifyError(e);
    }
  };
  return (
    <section class="panel" aria-labelledby="mem-h">
      <h2 id="mem-h">Your projects</h2>
      <ul class="rows">
        {mine.map((m) => {
          const p = s.projects.get(m.project)!;
          const owner = m.roles.includes("owner");
          return (
            <li class="row-item" key={p.gid}>
              <div class="row-main">
                {m.status === "active" && p.status === "active" ? (
                  <Link href={`/console/p/${p.gid}/assets`}>{p.name}</Link>
                ) : (
                  <strong>{p.name}</strong>
                )}
                <span class="muted">{owner ? "Owner" : m.status === "invited" ? "Invited" : "Member"}</span>
              </div>
              <div class="row-actions">
                {m.status === "invited" ? (
                  <>
                    <button
                      class="btn small primary"
                      onClick={act(() => account.acceptInvite(p.gid), `You joined ${p.name}`)}
                    >
                      Accept
                    </button>
                    <button class="btn small" onClick={act(() => account.declineInvite(p.gid), "Invitation declined")}>
                      Decline
                    </button>
                  </>
                ) : !owner ? (
                  <button
                    class="btn small danger"
                    onClick={async () => {
                      if (
                        await confirm({
                          title: "Leave project",
                          text: `Leave ${p.name}?`,
                          action: "Leave",
                          danger: true,
                        })
                      )
                        void act(() => account.leaveProject(p.gid), `You left ${p.name}`)();
                    }}
                  >
                    Leave
                  </button>
                ) : null}
              </div>
            </li>
          );
        })}
      </ul>
    </section>
  );
}

function DeletePanel(props: { me: User; owned: Project[] }) {
  const [error, setError] = useState<unknown>(null);
  const owned = props.owned;
  return (
    <section class="panel danger-zone" aria-labelledby="delacc-h">
      <h2 id="delacc-h">Delete your account</h2>
      <p>
        Your memberships end and the projects you deleted earlier are removed for good. Delete the projects you still
        own first.
      </p>
      {/* The server refuses while the account owns an active project: say which, before any confirmation. */}
      {owned.length ? (
        <p id="delacc-owned" class="muted">
          {owned.length === 1 ? "You still own " : `You still own ${owned.length} projects: `}
          {owned.map((p, i) => (
            <span key={p.gid}>
              {i ? ", " : ""}
              <Link href={`/console/p/${p.gid}/settings`}>{p.name}</Link>
            </span>
          ))}
          . Delete {owned.length === 1 ? "it" : "them"} in {owned.length === 1 ? "its" : "their"} settings first.
        </p>
      ) : null}
      <button
        class="btn danger"
        disabled={owned.length > 0}
        aria-describedby={owned.length ? "delacc-owned" : undefined}
        onClick={async () => {
          setError(null);
          const ok = await confirm({
            title: "Delete account",
            text: "Your account is removed at once and cannot be brought back.",
            action: "Delete my account",
            danger: true,
            typed: props.me.username ?? "",
          });
          if (!ok) return;
          try {
            await account.deleteAccount();
            signOut("Your account has been deleted");
          } catch (e) {
            setError(e instanceof ApiError ? e : new Error(String(e)));
          }
        }}
      >
        Delete account
      </button>
      <ErrorNote error={error} />
    </section>
  );
}
