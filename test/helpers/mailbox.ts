import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export type Letter = { to: string; subject: string; body: string };

/** Decodes quoted-printable text (soft line breaks and =XX bytes, read as UTF-8). */
function unQuote(s: string): string {
  const joined = s.replace(/=\r?\n/g, "");
  const bytes: number[] = [];
  for (let i = 0; i < joined.length; i++) {
    const hex = joined[i] === "=" ? joined.slice(i + 1, i + 3) : "";
    if (/^[0-9A-F]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else bytes.push(...Buffer.from(joined[i]!, "utf8"));
  }
  return Buffer.from(bytes).toString("utf8");
}

/** The mails a server without SMTP wrote to `<data>/outbox/`, oldest first. */
export function outbox(dataDir: string): Letter[] {
  const dir = join(dataDir, "outbox");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".eml"))
    .sort()
    .map((f) => {
      const raw = readFileSync(join(dir, f), "utf8");
      const header = raw.slice(0, raw.search(/\r?\n\r?\n/));
      const field = (name: string) => new RegExp(`^${name}: (.*(?:\\r?\\n[ \\t].*)*)`, "mi").exec(header)?.[1]?.replace(/\r?\n[ \t]/g, " ") ?? "";
      return { to: field("To"), subject: field("Subject"), body: unQuote(raw) };
    });
}

/** The invitee and project gids of the last invitation link sent to `to`. */
export function invitationOf(dataDir: string, to: string): { invitee: string; project: string; letter: Letter } {
  const letter = outbox(dataDir).filter((l) => l.to.includes(to)).at(-1);
  if (!letter) throw new Error(`no mail to ${to}`);
  const link = /https?:\/\/\S+\/invite\?[^\s"<]+/.exec(letter.body)?.[0];
  if (!link) throw new Error(`no invitation link in the mail to ${to}`);
  const q = new URL(link.replace(/&amp;/g, "&")).searchParams;
  return { invitee: q.get("invitee")!, project: q.get("project")!, letter };
}
