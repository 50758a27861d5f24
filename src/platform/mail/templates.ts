/**
 * The mails Apis sends, as plain text and HTML, in English and German (other languages fall back
 * to English; regional codes such as `de-ch` use their base language). Every template is a pure
 * function of its variables; `renderMail` picks the language and escapes values for the HTML part.
 */

export type Rendered = { subject: string; text: string; html: string };

/** Variables of each kind of mail. `baseUrl` is the public base URL (`ctx.baseUrl`, no trailing slash). */
export type MailVars = {
  /** Step one of signup: the code to finish creating `username`. */
  signup_code: { baseUrl: string; code: string; username: string; minutes: number };
  /** Step one of a password reset: one code for every account (username) on the address. */
  reset_code: { baseUrl: string; code: string; usernames: string[]; minutes: number };
  /** Step one of an email change: the code is sent to the new address. */
  email_change_code: { baseUrl: string; code: string; username: string; email: string; minutes: number };
  /**
   * An invitation to a project. `inviter` is the owner's display name (name, else username);
   * `link` defaults to `invitationLink(baseUrl, projectGid, inviteeGid)`; `hasAccount` says
   * whether the invitee can sign in already (else the mail asks to sign up with this address).
   */
  invitation: {
    baseUrl: string;
    projectName: string;
    projectGid: string;
    inviteeGid: string;
    inviter: string;
    hasAccount: boolean;
    link?: string;
    declineLink?: string;
  };
};

export type MailKind = keyof MailVars;

/** Languages that have their own texts. */
const MAIL_LANGUAGES = ["en", "de"] as const;
type MailLanguage = (typeof MAIL_LANGUAGES)[number];

/** The mail language for a user's language code: `de`, `de-at`, ... → de; anything else → en. */
function mailLanguage(code: string | null | undefined): MailLanguage {
  const base = String(code ?? "")
    .toLowerCase()
    .split(/[-_]/)[0];
  return (MAIL_LANGUAGES as readonly string[]).includes(base!) ? (base as MailLanguage) : "en";
}

/** The link an invitation mail carries: the client's invitation page with both gids. */
function invitationLink(baseUrl: string, projectGid: string, inviteeGid: string): string {
  return `${baseUrl}/invite?project=${encodeURIComponent(projectGid)}&invitee=${encodeURIComponent(inviteeGid)}`;
}

/** The decline link of an invitation mail (same page, `action=decline`). */
function declineLink(baseUrl: string, projectGid: string, inviteeGid: string): string {
  return `${invitationLink(baseUrl, projectGid, inviteeGid)}&action=decline`;
}

/** Renders one mail of `kind` in the user's `language` (a code of the language list). */
export function renderMail<K extends MailKind>(
  kind: K,
  language: string | null | undefined,
  vars: MailVars[K],
): Rendered {
  const words = WORDS[mailLanguage(language)];
  const body = (TEMPLATES[kind] as (v: MailVars[K], w: Words) => Body)(vars, words);
  const footer = FOOTER(words, vars.baseUrl);
  return {
    subject: body.subject,
    text: [...body.lines.map((l) => l.text), "—\n" + footer].join("\n\n") + "\n",
    html: layout(body.subject, body.lines.map((l) => l.html).join("\n"), footer),
  };
}

/** The invitation mail; what the members area sends on `members/invite` and `resend_invite`. */
export function renderInvitation(language: string | null | undefined, vars: MailVars["invitation"]): Rendered {
  return renderMail("invitation", language, vars);
}

// ---------------------------------------------------------------------------------------------
// Building blocks: each line of a mail has a text and an HTML form.

type Line = { text: string; html: string };
type Body = { subject: string; lines: Line[] };

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/** A paragraph; `{x}` placeholders are filled from `vars`, escaped in HTML, bold for `*x*`. */
function p(template: string, vars: Record<string, string> = {}): Line {
  const fill = (html: boolean) =>
    template.replace(/(\*?)\{(\w+)\}\1/g, (_m, star: string, k: string) => {
      const v = vars[k] ?? "";
      if (!html) return v;
      return star ? `<strong>${esc(v)}</strong>` : esc(v);
    });
  return { text: fill(false), html: `<p style="margin:0 0 16px">${fill(true)}</p>` };
}

/** The verification code, large and spaced in HTML, on its own line in text. */
function code(c: string): Line {
  return {
    text: `    ${c}`,
    html: `<p style="margin:0 0 16px;font:bold 28px/1.2 ui-monospace,Menlo,Consolas,monospace;letter-spacing:6px">${esc(c)}</p>`,
  };
}

function list(items: string[]): Line {
  return {
    text: items.map((i) => `  - ${i}`).join("\n"),
    html: `<ul style="margin:0 0 16px">${items.map((i) => `<li><strong>${esc(i)}</strong></li>`).join("")}</ul>`,
  };
}

function button(label: string, href: string): Line {
  return {
    text: `${label}: ${href}`,
    html: `<p style="margin:0 0 16px"><a href="${esc(href)}" style="display:inline-block;padding:10px 18px;background:#2456c7;color:#fff;text-decoration:none;border-radius:4px">${esc(label)}</a><br><span style="font-size:12px;color:#666">${esc(href)}</span></p>`,
  };
}

function layout(title: string, content: string, footer: string): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${esc(title)}</title></head>
<body style="margin:0;padding:24px;background:#f4f5f7;font:15px/1.5 -apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#1d1f23">
<div style="max-width:560px;margin:0 auto;background:#fff;padding:24px;border-radius:6px">
${content}
<hr style="border:none;border-top:1px solid #e3e5e8;margin:24px 0 12px">
<p style="margin:0;font-size:12px;color:#666">${esc(footer)}</p>
</div></body></html>
`;
}

/**
 * The words of every mail, per language. The layout of each kind of mail is written once, in
 * TEMPLATES below; a new language is one more entry here (and in MAIL_LANGUAGES).
 */
const WORDS = {
  en: {
    footer: "Sent by Apis at {url}. If you did not ask for this, you can ignore this mail.",
    hello: "Hello,",
    codeOnce: "The code works once and expires in {minutes} minutes.",
    signupSubject: "Your Apis verification code: {code}",
    signupIntro: "to finish creating the account *{username}*, enter this verification code:",
    resetSubject: "Your Apis password reset code: {code}",
    resetOne: "someone asked to reset the password of the account with this email address:",
    resetMany:
      "someone asked to reset a password of an account with this email address. These accounts use it; choose the username whose password you want to reset:",
    resetEnter: "Enter this code together with the username and your new password:",
    emailSubject: "Confirm your new Apis email address: {code}",
    emailIntro:
      "the account *{username}* wants to use *{email}* as its email address from now on. To confirm, enter this code:",
    inviteSubject: "{inviter} invites you to the project {project}",
    inviteIntro: "*{inviter}* invites you to join the project *{project}* on Apis.",
    inviteSignIn: "Sign in and accept the invitation:",
    inviteSignUp: "You do not have an account yet: sign up with this email address, then accept the invitation:",
    inviteOpen: "Open the invitation",
    inviteDecline: "Decline",
    inviteIds: "Project: {project} · Invitee: {invitee}",
  },
  de: {
    footer: "Gesendet von Apis unter {url}. Wenn Sie das nicht angefordert haben, können Sie diese E-Mail ignorieren.",
    hello: "Hallo,",
    codeOnce: "Der Code gilt einmal und läuft in {minutes} Minuten ab.",
    signupSubject: "Ihr Apis-Bestätigungscode: {code}",
    signupIntro: "um das Konto *{username}* fertig einzurichten, geben Sie diesen Bestätigungscode ein:",
    resetSubject: "Ihr Apis-Code zum Zurücksetzen des Passworts: {code}",
    resetOne: "jemand möchte das Passwort des Kontos mit dieser E-Mail-Adresse zurücksetzen:",
    resetMany:
      "jemand möchte das Passwort eines Kontos mit dieser E-Mail-Adresse zurücksetzen. Diese Konten verwenden sie; wählen Sie den Benutzernamen, dessen Passwort Sie zurücksetzen möchten:",
    resetEnter: "Geben Sie diesen Code zusammen mit dem Benutzernamen und Ihrem neuen Passwort ein:",
    emailSubject: "Bestätigen Sie Ihre neue Apis-E-Mail-Adresse: {code}",
    emailIntro:
      "das Konto *{username}* möchte künftig *{email}* als E-Mail-Adresse verwenden. Zur Bestätigung geben Sie diesen Code ein:",
    inviteSubject: "{inviter} lädt Sie zum Projekt {project} ein",
    inviteIntro: "*{inviter}* lädt Sie ein, beim Projekt *{project}* auf Apis mitzuarbeiten.",
    inviteSignIn: "Melden Sie sich an und nehmen Sie die Einladung an:",
    inviteSignUp:
      "Sie haben noch kein Konto: Registrieren Sie sich mit dieser E-Mail-Adresse und nehmen Sie dann die Einladung an:",
    inviteOpen: "Einladung öffnen",
    inviteDecline: "Ablehnen",
    inviteIds: "Projekt: {project} · Eingeladen: {invitee}",
  },
} satisfies Record<MailLanguage, Record<string, string>>;
type Words = (typeof WORDS)["en"];

/** A template of WORDS with its `{x}` placeholders filled, as plain text (subjects, the footer). */
function fill(template: string, vars: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_m, k: string) => vars[k] ?? "");
}

const FOOTER = (w: Words, baseUrl: string) => fill(w.footer, { url: baseUrl });

const TEMPLATES: { [K in MailKind]: (v: MailVars[K], w: Words) => Body } = {
  signup_code: (v, w) => ({
    subject: fill(w.signupSubject, { code: v.code }),
    lines: [
      p(w.hello),
      p(w.signupIntro, { username: v.username }),
      code(v.code),
      p(w.codeOnce, { minutes: String(v.minutes) }),
    ],
  }),
  reset_code: (v, w) => ({
    subject: fill(w.resetSubject, { code: v.code }),
    lines: [
      p(w.hello),
      p(v.usernames.length > 1 ? w.resetMany : w.resetOne),
      list(v.usernames),
      p(w.resetEnter),
      code(v.code),
      p(w.codeOnce, { minutes: String(v.minutes) }),
    ],
  }),
  email_change_code: (v, w) => ({
    subject: fill(w.emailSubject, { code: v.code }),
    lines: [
      p(w.hello),
      p(w.emailIntro, { username: v.username, email: v.email }),
      code(v.code),
      p(w.codeOnce, { minutes: String(v.minutes) }),
    ],
  }),
  invitation: (v, w) => ({
    subject: fill(w.inviteSubject, { inviter: v.inviter, project: v.projectName }),
    lines: [
      p(w.hello),
      p(w.inviteIntro, { inviter: v.inviter, project: v.projectName }),
      p(v.hasAccount ? w.inviteSignIn : w.inviteSignUp),
      button(w.inviteOpen, v.link ?? invitationLink(v.baseUrl, v.projectGid, v.inviteeGid)),
      button(w.inviteDecline, v.declineLink ?? declineLink(v.baseUrl, v.projectGid, v.inviteeGid)),
      p(w.inviteIds, { project: v.projectGid, invitee: v.inviteeGid }),
    ],
  }),
};
