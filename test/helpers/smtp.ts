import { SMTPServer } from "smtp-server";
import { PATIENCE_MS } from "./server";

export type Received = { from: string; to: string[]; subject: string; text: string; html: string; raw: string };

/**
 * A real SMTP server on a free port that keeps every message it receives, for tests that read
 * verification codes and invitation links from mails. Start the TestServer with
 * `{ "smtp-url": smtp.url }`.
 */
export class TestSmtp {
  readonly messages: Received[] = [];
  private waiters: (() => void)[] = [];

  private constructor(
    private readonly server: SMTPServer,
    readonly port: number,
  ) {}

  static async start(): Promise<TestSmtp> {
    let self!: TestSmtp;
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS", "AUTH"],
      logger: false,
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on("data", (c: Buffer) => chunks.push(c));
        stream.on("end", () => {
          const raw = Buffer.concat(chunks).toString("utf8");
          const parsed = parseMime(raw);
          self.messages.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
            to: session.envelope.rcptTo.map((r) => r.address),
            subject: parsed.subject,
            text: parsed.text,
            html: parsed.html,
            raw,
          });
          for (const w of self.waiters.splice(0)) w();
          callback();
        });
      },
    });
    const port = await new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve((server.server.address() as { port: number }).port));
    });
    self = new TestSmtp(server, port);
    return self;
  }

  /** The URL for `--smtp-url`: plain SMTP, no TLS upgrade. */
  get url(): string {
    return `smtp://127.0.0.1:${this.port}/?ignoreTLS=true`;
  }

  /** Waits for the next mail to `to` that arrives after `since` messages (default: any new one). */
  async next(to: string, since = this.messages.length, timeoutMs = PATIENCE_MS): Promise<Received> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.slice(since).find((m) => m.to.some((a) => a.toLowerCase() === to.toLowerCase()));
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no mail to ${to} within ${timeoutMs} ms (have ${this.messages.length})`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Mails to `to` received so far. */
  to(to: string): Received[] {
    return this.messages.filter((m) => m.to.some((a) => a.toLowerCase() === to.toLowerCase()));
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** The 6-character verification code of a mail: the indented line of the plain text. */
export function codeOf(mail: Received): string {
  const m = mail.text.match(/^\s{4}([2-9A-HJ-NP-Z]{6})\s*$/m);
  if (!m) throw new Error(`no code in mail: ${mail.text}`);
  return m[1]!;
}

// A small MIME reader for the mails nodemailer writes: headers, multipart/alternative bodies,
// quoted-printable or base64 parts, encoded-word subjects.

function splitHead(part: string): { headers: Record<string, string>; body: string } {
  const at = part.search(/\r?\n\r?\n/);
  const head = at < 0 ? part : part.slice(0, at);
  const body = at < 0 ? "" : part.slice(at).replace(/^\r?\n\r?\n/, "");
  const headers: Record<string, string> = {};
  for (const line of head.replace(/\r?\n[ \t]+/g, " ").split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return { headers, body };
}

function decodeQP(s: string): string {
  const bytes: number[] = [];
  const text = s.replace(/=\r?\n/g, "");
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "=" && /^[0-9A-F]{2}$/i.test(text.slice(i + 1, i + 3))) {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(...Buffer.from(text[i]!, "utf8"));
  }
  return Buffer.from(bytes).toString("utf8");
}

function decodeBody(headers: Record<string, string>, body: string): string {
  const enc = (headers["content-transfer-encoding"] ?? "").toLowerCase();
  if (enc === "base64") return Buffer.from(body.replace(/\s+/g, ""), "base64").toString("utf8");
  if (enc === "quoted-printable") return decodeQP(body);
  return body;
}

function decodeWords(s: string): string {
  return s.replace(/=\?([^?]+)\?([QqBb])\?([^?]*)\?=\s*/g, (_m, _cs, kind: string, data: string) =>
    kind.toUpperCase() === "B" ? Buffer.from(data, "base64").toString("utf8") : decodeQP(data.replace(/_/g, " ")),
  );
}

export function parseMime(raw: string): { subject: string; text: string; html: string } {
  const out = { subject: "", text: "", html: "" };
  const top = splitHead(raw);
  out.subject = decodeWords(top.headers["subject"] ?? "");
  const visit = (headers: Record<string, string>, body: string) => {
    const type = (headers["content-type"] ?? "text/plain").toLowerCase();
    const boundary = /boundary="?([^";]+)"?/i.exec(headers["content-type"] ?? "")?.[1];
    if (type.startsWith("multipart/") && boundary) {
      for (const piece of body.split("--" + boundary).slice(1)) {
        if (piece.startsWith("--")) break;
        const p = splitHead(piece.replace(/^\r?\n/, ""));
        visit(p.headers, p.body);
      }
    } else if (type.startsWith("text/html")) out.html = decodeBody(headers, body);
    else if (type.startsWith("text/plain")) out.text = decodeBody(headers, body).replace(/\r\n/g, "\n");
  };
  visit(top.headers, top.body);
  return out;
}
