/** A one-line byte progress bar on stderr, drawn only on a terminal (at most 10 times a second). */
export class ProgressBar {
  private last = 0;
  private drawn = false;
  constructor(
    private readonly label: string,
    private readonly enabled = !!process.stderr.isTTY,
  ) {}

  update = (done: number, total: number) => {
    if (!this.enabled) return;
    const t = Date.now();
    if (t - this.last < 100 && done < total) return;
    this.last = t;
    const width = 30;
    const frac = total > 0 ? Math.min(1, done / total) : 1;
    const full = Math.round(frac * width);
    const line = `${this.label} [${"#".repeat(full)}${" ".repeat(width - full)}] ${(frac * 100).toFixed(0).padStart(3)}% ${formatBytes(done)}/${formatBytes(total)}`;
    process.stderr.write(`\r${line}\x1b[K`);
    this.drawn = true;
  };

  end() {
    if (this.drawn) process.stderr.write("\n");
    this.drawn = false;
  }
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}
