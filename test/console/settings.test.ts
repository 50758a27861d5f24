// The console's project settings page end to end, in headless Chromium: languages, channels,
// orderings and fieldlists, checked against what the server then answers.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { TestServer, until } from "../helpers/server";
import { CHROMIUM, holdReads, launch, screenshot, watchErrors } from "./browser";

setDefaultTimeout(120_000);

describe.skipIf(!CHROMIUM)("web console: project settings", () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    server = await TestServer.start();
    browser = await launch();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    errors = watchErrors(page);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  async function options(project: string): Promise<any> {
    const token = String(await page.evaluate("localStorage.getItem('apis.jwt')"));
    const answer = await server.call("/api/projects/get", { token, body: { project } });
    return answer.body.data["cc.projects"][project].options;
  }
  const names = (o: any, kind: string) => (o[`ordered${kind}`] as string[]).map((k) => o[kind][k]);

  test("languages are added, moved and removed (values kept unless confirmed), and channels, orderings and fieldlists are created, renamed, moved and deleted", async () => {
    await server.user("olga", "olgas-secret-1");
    await page.goto(server.url + "/");
    await page.getByLabel("Username").fill("olga");
    await page.getByLabel("Password").fill("olgas-secret-1");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { name: "Projects", exact: true }).waitFor();
    await page.getByLabel("Name").fill("Settings demo");
    await page.getByRole("button", { name: "Create project" }).click();
    await page.getByRole("heading", { name: "Assets", exact: true }).waitFor();
    const gid = /\/console\/p\/([0-9a-z]+)\//.exec(page.url())![1]!;
    await page.getByRole("link", { name: "Settings" }).click();

    // Languages: add two, make German the main one, remove French with its values and English without.
    const languages = page.getByRole("list", { name: "Languages" });
    for (const [code, name] of [
      ["de", "German"],
      ["fr", "French"],
    ]) {
      await page.getByLabel("Language to add").selectOption(code!);
      await page.getByRole("button", { name: "Add language" }).click();
      await languages.locator(`li[data-language="${code}"]`).getByText(name!, { exact: true }).waitFor();
    }
    await page.getByRole("button", { name: "Move German up", exact: true }).click();
    await languages.locator("li").first().getByText("Main").waitFor();
    await languages.locator('li[data-language="de"]').getByText("Main").waitFor();
    expect((await options(gid)).languages).toEqual(["de", "en", "fr"]);

    await page.getByRole("button", { name: "Remove French", exact: true }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByRole("button", { name: "Remove language", exact: true }).waitFor();
    await dialog.getByLabel(/Also delete every value/).check();
    await dialog.getByRole("button", { name: "Remove language and values" }).click();
    await page.getByText("French removed with 0 values").waitFor();
    await page.getByRole("button", { name: "Remove English", exact: true }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Remove language", exact: true }).click();
    await page.getByText("English removed; its values are kept").waitFor();
    await languages.locator('li[data-language="en"]').waitFor({ state: "detached" });
    expect((await options(gid)).languages).toEqual(["de"]);
    // The last language cannot be removed.
    expect(await page.getByRole("button", { name: "Remove German", exact: true }).isDisabled()).toBe(true);

    // Channels: create, rename, move before the main channel; the [all records] channel stays first and fixed.
    const channels = page.locator('section[data-setting="channel"]');
    await channels.getByLabel("New channel").fill("Webshop");
    await channels.getByRole("button", { name: "Create channel" }).click();
    await channels.getByText("Webshop", { exact: true }).waitFor();
    await channels.getByRole("button", { name: "Edit the name of Webshop" }).click();
    await channels.getByLabel("New name of Webshop").fill("Web shop");
    await channels.getByRole("button", { name: "Save" }).click();
    await channels.getByText("Web shop", { exact: true }).waitFor();
    await channels.getByRole("button", { name: "Move Web shop up" }).click();
    await channels.locator("li").nth(1).getByText("Web shop", { exact: true }).waitFor();
    expect(await channels.getByRole("button", { name: "Move Web shop up" }).isDisabled()).toBe(true);
    expect(await channels.locator("li").first().getByRole("button").count()).toBe(0);
    expect(names(await options(gid), "channels")).toEqual(["[all records]", "Web shop", "Main channel"]);

    // Orderings: a second one, with the main one moved below it; fieldlists: the main one deleted.
    const orderings = page.locator('section[data-setting="ordering"]');
    await orderings.getByLabel("New ordering").fill("By price");
    await orderings.getByRole("button", { name: "Create ordering" }).click();
    await orderings.getByRole("button", { name: "Move Main ordering down" }).click();
    await orderings.locator("li").first().getByText("By price", { exact: true }).waitFor();
    const fieldlists = page.locator('section[data-setting="fieldlist"]');
    await fieldlists.getByRole("button", { name: "Delete Main fieldlist" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await fieldlists.getByText("No fieldlists.").waitFor();
    await screenshot(page, "12-project-settings");

    const o = await options(gid);
    expect(names(o, "orderings")).toEqual(["By price", "Main ordering"]);
    expect(o.orderedfieldlists).toEqual([]);
    expect(errors).toEqual([]);
  });

  test("the keyboard keeps its place: a moved channel keeps the focus on its arrows, Escape leaves a rename for its Edit name button, and an added language's row takes the focus", async () => {
    const focusIs = (label: string) =>
      page.waitForFunction(`document.activeElement?.getAttribute("aria-label") === ${JSON.stringify(label)}`);
    const channels = page.locator('section[data-setting="channel"]');
    // [all records], Web shop, Main channel: Main channel moves up to right under the fixed first
    // entry (its ↑ is then disabled, so ↓ takes the focus), then back down to the end.
    const move = async (label: string, position: number) => {
      await page.keyboard.press("Enter");
      await channels.locator("li").nth(position).getByText("Main channel", { exact: true }).waitFor();
      await focusIs(label);
    };
    await channels.getByRole("button", { name: "Move Main channel up" }).focus();
    await move("Move Main channel down", 1);
    await move("Move Main channel up", 2);

    await channels.getByRole("button", { name: "Edit the name of Web shop" }).focus();
    await page.keyboard.press("Enter");
    await channels.getByLabel("New name of Web shop").waitFor();
    await page.keyboard.type(" 2");
    await page.keyboard.press("Escape");
    await channels.getByLabel("New name of Web shop").waitFor({ state: "detached" });
    await focusIs("Edit the name of Web shop");
    expect(await channels.getByText("Web shop", { exact: true }).count()).toBe(1);

    await page.getByLabel("Language to add").selectOption("fr");
    await page.getByRole("button", { name: "Add language" }).focus();
    await page.keyboard.press("Enter");
    await focusIs("Move French up");
    expect(errors).toEqual([]);
  });

  test("a move's answer is not undone by a re-read of the project that was on its way before it: the order shown never steps back", async () => {
    const channels = page.locator('section[data-setting="channel"]');
    const gid = /\/console\/p\/([0-9a-z]+)\//.exec(page.url())![1]!;
    const order = () => channels.locator("li").allInnerTexts();
    const at = async (name: string, position: number) =>
      channels.locator("li").nth(position).getByText(name, { exact: true }).waitFor();
    // The page's re-reads of the project are answered only when the test says so, with what the
    // server answered when they were asked.
    let release!: () => void;
    const reads = await holdReads(page, `**/api/p/${gid}/init`, new Promise<void>((r) => (release = r)));
    // Every order the list shows, in turn (by the rows' keys).
    await page.evaluate(`(() => {
      const list = document.querySelector('section[data-setting="channel"] ul');
      const keys = () => [...list.querySelectorAll("li")].map((li) => li.getAttribute("data-key")).join("|");
      const seen = [keys()];
      new MutationObserver(() => {
        if (seen.at(-1) !== keys()) seen.push(keys());
      }).observe(list, { childList: true, subtree: true });
      window.channelOrders = seen;
    })()`);
    await at("Main channel", 2);
    const before = await order();
    // Main channel up: its sync item's re-read goes out (and is held); then Web shop up, whose
    // answer comes while that re-read still holds the order from before it.
    await channels.getByRole("button", { name: "Move Main channel up" }).click();
    await at("Main channel", 1);
    await until(() => reads.asked >= 1, undefined, "the first move's re-read");
    await channels.getByRole("button", { name: "Move Web shop up" }).click();
    await at("Web shop", 1);
    await until(() => reads.asked >= 2, undefined, "the second re-read");
    release();
    await until(() => reads.answered === reads.asked, undefined, "the re-reads' answers");
    // The answers read and shown: two frames later.
    await page.evaluate(
      "new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 0))))",
    );
    await reads.unroute();
    const orders: string[] = await page.evaluate("window.channelOrders");
    expect(orders.length).toBe(3);
    expect(await order()).toEqual(before);
    expect(errors).toEqual([]);
  });
});
