import nodemailer, { type Transporter } from "nodemailer";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Config } from "../../config";
import type { Logger } from "../../core/log";
import { newGid } from "../../core/ids";

export type Mail = { to: string; subject: string; text: string; html: string };

/**
 * Sends mail with nodemailer over SMTP when `APIS_SMTP_URL` is set; otherwise writes each mail as
 * an .eml file into `<data>/outbox/` and logs where, so a tester can read codes without a server.
 */
export class Mailer {
  private readonly transport: Transporter;
  private readonly smtp: boolean;

  constructor(private readonly config: Config, private readonly outbox: () => string, private readonly log: Logger) {
    this.smtp = config.smtpUrl !== "";
    this.transport = this.smtp
      ? nodemailer.createTransport(config.smtpUrl)
      : nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "unix" });
  }

  async send(mail: Mail): Promise<void> {
    const info = await this.transport.sendMail({ from: this.config.smtpFrom, ...mail });
    if (this.smtp) {
      // Never the subject or text: they carry verification codes and invitation links.
      this.log.info("mail sent", { to: mail.to });
      return;
    }
    const file = join(this.outbox(), `${new Date().toISOString().replace(/[:.]/g, "-")}-${newGid(6)}.eml`);
    writeFileSync(file, (info as any).message as Buffer);
    this.log.info(`mail written to ${file} (no APIS_SMTP_URL set)`, { to: mail.to });
  }

  close() {
    this.transport.close();
  }
}
