import type { Transporter } from "nodemailer";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "../../config";
import type { Logger } from "../../core/log";
import { newGid } from "../../core/ids";

export type Mail = { to: string; subject: string; text: string; html: string };

/**
 * Sends mail with nodemailer over SMTP when `APIS_SMTP_URL` is set; otherwise writes each mail as
 * an .eml file into `<data>/outbox/` and logs where, so a tester can read codes without a server.
 * nodemailer is loaded with the first mail, not at start-up; with SMTP configured it is loaded
 * half a second after start, so the first mail (a password reset) takes as long as any other.
 */
export class Mailer {
  private transport: Transporter | undefined;
  private readonly smtp: boolean;
  private closed = false;

  constructor(
    private readonly config: Config,
    private readonly outbox: () => string,
    private readonly log: Logger,
  ) {
    this.smtp = config.smtpUrl !== "";
    if (this.smtp) setTimeout(() => void this.transporter().catch(() => {}), 500).unref?.();
  }

  private async transporter(): Promise<Transporter> {
    if (this.transport) return this.transport;
    if (this.closed) throw new Error("the mailer is closed");
    const { default: nodemailer } = await import("nodemailer");
    this.transport ??= this.smtp
      ? nodemailer.createTransport(this.config.smtpUrl)
      : nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "unix" });
    return this.transport;
  }

  /** Mail on its way (requests answer before their mail is out: the account feature's `sendLater`). */
  private readonly inFlight = new Set<Promise<void>>();

  async send(mail: Mail): Promise<void> {
    if (this.closed) throw new Error("the mailer is closed");
    const sending = this.deliver(mail);
    this.inFlight.add(sending);
    try {
      await sending;
    } finally {
      this.inFlight.delete(sending);
    }
  }

  private async deliver(mail: Mail): Promise<void> {
    const info = await (await this.transporter()).sendMail({ from: this.config.smtpFrom, ...mail });
    if (this.smtp) {
      // Never the subject or text: they carry verification codes and invitation links.
      this.log.info("mail sent", { to: mail.to });
      return;
    }
    const file = join(this.outbox(), `${new Date().toISOString().replace(/[:.]/g, "-")}-${newGid(6)}.eml`);
    writeFileSync(file, (info as any).message as Buffer);
    this.log.info(`mail written to ${file} (no APIS_SMTP_URL set)`, { to: mail.to });
  }

  /**
   * Takes no more mail, lets the mail on its way go out (a code the answer announced should not be
   * lost to a restart), waiting at most `waitMs`, then closes the connection.
   */
  async close(waitMs = 10_000): Promise<void> {
    this.closed = true;
    if (this.inFlight.size) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([Promise.allSettled([...this.inFlight]), new Promise((r) => (timer = setTimeout(r, waitMs)))]);
      clearTimeout(timer);
    }
    this.transport?.close();
  }
}
