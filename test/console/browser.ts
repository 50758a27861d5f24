// Headless Chromium for the console's end-to-end tests: Debian's `chromium` package driven by
// playwright-core (no browser download). Without it the tests are skipped with this message.
import { chromium, type Browser, type Locator, type Page } from "playwright-core";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";

export const INSTALL_COMMAND = "apt-get install -y chromium";

/** The browser: $APIS_CHROMIUM, or Debian's chromium. */
export const CHROMIUM = [process.env.APIS_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"].find(
  (p) => !!p && existsSync(p),
);

if (!CHROMIUM) console.warn(`\n[console tests] skipped: Chromium was not found. Install it with: ${INSTALL_COMMAND}\n`);

export function launch(): Promise<Browser> {
  // --no-sandbox: CI and containers run as root, where Chromium's sandbox cannot start.
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
  });
}

/** Screenshots for review go to test/console/screenshots/ (git-ignored). */
export const SCREENSHOTS = join(import.meta.dir, "screenshots");

export async function screenshot(page: Page, name: string) {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Collects page errors and console errors, so a test can say the page stayed healthy. */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !/Failed to load resource/.test(m.text())) errors.push(`console: ${m.text()}`);
  });
  return errors;
}

/**
 * Focuses `row` and presses Alt+`key` on it twice in one go (two keydown events in one task), so
 * the second comes while the first one's change is still saving.
 */
export async function altKeyTwice(row: Locator, key: string): Promise<void> {
  await row.focus();
  await row.evaluate((el, key) => {
    const Key = el.ownerDocument.defaultView!.KeyboardEvent;
    for (let i = 0; i < 2; i++) el.dispatchEvent(new Key("keydown", { key, altKey: true, bubbles: true }));
  }, key);
}

/** What `holdReads` has seen of the requests it routes. */
export type HeldReads = { asked: number; fetched: number; answered: number; unroute: () => Promise<void> };

/**
 * Routes the page's requests matching `pattern` through the server and holds the answers of those
 * `held` picks (by their number, from 1) until `until` resolves: each is then answered with what
 * the server answered when it was asked (a read that was on its way before a change). `fetched`
 * counts the server's answers, `answered` the page's. A request the page gave up on meanwhile
 * (Playwright: "Route is already handled") has nothing left to answer, and counts as answered.
 */
export async function holdReads(
  page: Page,
  pattern: string,
  until: Promise<void>,
  held: (n: number) => boolean = () => true,
): Promise<HeldReads> {
  const seen: HeldReads = { asked: 0, fetched: 0, answered: 0, unroute: () => page.unroute(pattern) };
  await page.route(pattern, async (route) => {
    const n = ++seen.asked;
    try {
      const response = await route.fetch();
      seen.fetched++;
      if (held(n)) await until;
      await route.fulfill({ response });
    } catch (err) {
      if (!/Route is already handled/.test(String(err))) throw err;
    }
    seen.answered++;
  });
  return seen;
}
