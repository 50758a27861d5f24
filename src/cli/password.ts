import { stringFlag, UsageError } from "./args";

/**
 * The password for `apis user create|set-password`: `--password` when given (it lands in the shell's
 * history, so the prompt or stdin is better); otherwise typed at a prompt without echo when stdin is
 * a terminal (asked twice), or the first line of stdin when it is a pipe or file
 * (`printf '%s\n' "$PW" | apis user set-password --username ann`).
 */
export async function readPassword(flags: Record<string, string | boolean>): Promise<string> {
  const given = stringFlag(flags, "password");
  if (given !== undefined) return given;
  if (process.stdin.isTTY) {
    const first = await promptHidden("Password: ");
    if (!first) throw new UsageError("no password typed");
    const again = await promptHidden("Repeat password: ");
    if (again !== first) throw new UsageError("the two passwords differ; nothing was changed");
    return first;
  }
  const text = await Bun.stdin.text();
  const line = text.split("\n", 1)[0]!.replace(/\r$/, "");
  if (!line)
    throw new UsageError("no password: give --password, type it at the prompt (on a terminal) or send it on stdin");
  return line;
}

/** Reads one line from the terminal with echo off (raw mode); Ctrl-C aborts with exit code 130. */
function promptHidden(prompt: string): Promise<string> {
  const stdin = process.stdin;
  // Echo goes off before the prompt shows: whatever is typed (or pasted) once the prompt is on the
  // screen is never echoed, however fast it comes.
  stdin.setRawMode(true);
  process.stderr.write(prompt);
  return new Promise((resolve) => {
    let typed = "";
    const done = (value: string | null) => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
      if (value === null) process.exit(130);
      resolve(value);
    };
    const onData = (chunk: Buffer | string) => {
      for (const ch of chunk.toString("utf8")) {
        if (ch === "\r" || ch === "\n") return done(typed);
        if (ch === "\u0003") return done(null); // Ctrl-C
        if (ch === "\u0004") {
          if (!typed) return done(null); // Ctrl-D on an empty line
          continue;
        }
        if (ch === "\u007f" || ch === "\b") typed = [...typed].slice(0, -1).join("");
        else if (ch === "\u0015")
          typed = ""; // Ctrl-U
        else if (ch >= " ") typed += ch;
      }
    };
    stdin.resume();
    stdin.on("data", onData);
  });
}
