// The console's schema pages end to end, in headless Chromium: fields of several types with their
// options, a class, a definition with a child definition and an edited layout; commit (after its
// dry run), revert and save as new; a second browser follows every change live.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { TestServer, until } from "../helpers/server";
import { altKeyTwice, CHROMIUM, holdReads, launch, screenshot, watchErrors } from "./browser";

setDefaultTimeout(180_000);

describe.skipIf(!CHROMIUM)("web console: schema", () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  let other: Page;
  let errors: string[];
  let otherErrors: string[];
  let token = "";
  let project = "";

  beforeAll(async () => {
    server = await TestServer.start();
    browser = await launch();
    ({ token } = await server.user("sara", "saras-secret-1"));
    project = await server.project(token, "Shop");
    const added = await server.call(`/api/p/${project}/languages/add`, { token, body: { language: "nl" } });
    expect(added.status).toBe(200);
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    other = await (await browser.newContext({ viewport: { width: 360, height: 800 } })).newPage();
    errors = watchErrors(page);
    otherErrors = watchErrors(other);
    for (const p of [page, other]) {
      await p.goto(server.url + "/");
      await p.getByLabel("Username").fill("sara");
      await p.getByLabel("Password").fill("saras-secret-1");
      await p.getByRole("button", { name: "Sign in" }).click();
      await p.getByRole("heading", { name: "Projects", exact: true }).waitFor();
    }
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  /** The schema items as the server has them. */
  async function items(kind: "fields" | "classes" | "definitions"): Promise<any[]> {
    const r = await server.call(`/api/p/${project}/init`, { token });
    return Object.values(r.body.data[kind] ?? {});
  }
  const byName = async (kind: "fields" | "classes" | "definitions", name: string) =>
    (await items(kind)).find((i) => i.name === name && !i.is_working_copy);
  const editor = () => page.locator(".schema-editor");

  async function commitThroughDialog(p: Page = page) {
    await p.locator(".schema-editor .lifecycle").getByRole("button", { name: "Commit…" }).click();
    const dialog = p.getByRole("dialog");
    await dialog.getByTestId("commit-preview").waitFor();
    await dialog.getByRole("button", { name: "Commit", exact: true }).click();
    await dialog.waitFor({ state: "detached" });
    await p.locator(".schema-editor .lifecycle").getByText("Committed", { exact: true }).waitFor();
  }

  async function newField(name: string, type: string, labels: [string, string]) {
    await page.locator(".schema-list").getByRole("link", { name: "New field" }).click();
    await editor().getByRole("heading", { name: "New field" }).waitFor();
    await editor().getByLabel(/^Name/).fill(name);
    await editor().getByLabel(/^Type/).selectOption(type);
    await editor().getByLabel("Label (en)").fill(labels[0]);
    await editor().getByLabel("Label (nl)").fill(labels[1]);
  }

  test("fields of several types are created with their options, checked by the server, and committed", async () => {
    await page.goto(`${server.url}/console/p/${project}/schema`);
    await page.getByRole("heading", { name: "Schema", exact: true }).waitFor();
    await page.locator(".schema-list").getByText("No fields yet.").waitFor();
    await other.goto(`${server.url}/console/p/${project}/schema?tab=fields`);
    await other.locator(".schema-list").getByText("No fields yet.").waitFor();

    // A decimal with bounds, decimals, a unit and an initial value; a bad name and min > max come back next to their inputs.
    await newField("1width", "decimal", ["Width", "Breedte"]);
    await editor().getByLabel("Unit").fill("cm");
    await editor().getByLabel("Minimum").fill("50");
    await editor().getByLabel("Maximum").fill("10");
    await editor().getByLabel("Decimals (0–12)").fill("2");
    await editor().getByRole("button", { name: "Create field" }).click();
    await editor().locator(".field.invalid", { hasText: "Minimum" }).getByText("min must not be above max").waitFor();
    await editor().locator(".field.invalid", { hasText: "Name" }).waitFor();
    await editor().getByLabel(/^Name/).fill("width");
    await editor().getByLabel("Minimum").fill("0");
    await editor().getByLabel("Maximum").fill("1000");
    await editor().getByLabel("Initial value").fill("12.5");
    await editor().getByRole("button", { name: "Create field" }).click();
    await editor().getByRole("heading", { name: "Width" }).waitFor();
    await editor().locator(".lifecycle").getByText("New", { exact: true }).waitFor();
    // The second browser sees the new field appear.
    await other.locator(".schema-entry", { hasText: "Width" }).getByText("New").waitFor();
    await commitThroughDialog();
    const width = await byName("fields", "width");
    expect(width).toMatchObject({
      type: "decimal",
      unit: "cm",
      options: { min: 0, max: 1000, decimals: 2 },
      label: { en: "Width", nl: "Breedte" },
      is_new: false,
    });
    expect(width.initial.en).toBe(12.5);

    // A localized textline with a value list.
    await newField("color", "textline", ["Color", "Kleur"]);
    await editor()
      .getByLabel(/Localized \(/)
      .check();
    await editor().getByRole("button", { name: "Add value" }).click();
    await editor().getByLabel("Key 1", { exact: true }).fill("red");
    await editor().getByLabel("Label 1 (en)").fill("Red");
    await editor().getByLabel("Label 1 (nl)").fill("Rood");
    await editor().getByRole("button", { name: "Add value" }).click();
    await editor().getByLabel("Key 2", { exact: true }).fill("blue");
    await editor().getByLabel("Label 2 (en)").fill("Blue");
    await editor().getByLabel("Label 2 (nl)").fill("Blauw");
    await editor().getByLabel("Initial value (nl)").selectOption("blue");
    await editor().getByRole("button", { name: "Create field" }).click();
    await editor().getByRole("heading", { name: "Color" }).waitFor();
    await commitThroughDialog();
    const color = await byName("fields", "color");
    expect(color).toMatchObject({
      type: "textline",
      is_localized: true,
      options: {
        values: [
          { key: "red", label: { en: "Red", nl: "Rood" } },
          { key: "blue", label: { en: "Blue", nl: "Blauw" } },
        ],
      },
    });
    expect(color.initial).toEqual({ en: "", nl: "blue" });

    // A required whole number.
    await newField("height", "number", ["Height", "Hoogte"]);
    await editor()
      .getByLabel(/Required \(/)
      .check();
    await editor().getByLabel("Maximum").fill("500");
    await editor().getByRole("button", { name: "Create field" }).click();
    await editor().getByRole("heading", { name: "Height" }).waitFor();
    await commitThroughDialog();
    expect(await byName("fields", "height")).toMatchObject({
      type: "number",
      is_required: true,
      options: { max: 500 },
    });

    // The list is searchable.
    await page.getByLabel("Search fields").fill("decimal");
    await page.locator(".schema-entry").first().getByText("Width", { exact: true }).waitFor();
    expect(await page.locator(".schema-entry").count()).toBe(1);
    await page.getByLabel("Search fields").fill("");
    await screenshot(page, "20-schema-fields");
  });

  test("a class gets fields, in order, and a class field points at it", async () => {
    await page
      .getByRole("navigation", { name: "Schema" })
      .getByRole("link", { name: /Classes/ })
      .click();
    await page.locator(".schema-list").getByRole("link", { name: "New class" }).click();
    await editor().getByLabel(/^Name/).fill("dimensions");
    await editor().getByLabel("Label (en)").fill("Dimensions");
    await editor().getByRole("button", { name: "Create class" }).click();
    await editor().getByRole("heading", { name: "Dimensions" }).waitFor();
    const fields = editor().locator('section[data-member="fields"]');
    for (const f of ["Height", "Width"]) {
      await fields.getByLabel("Add a field").selectOption({ label: `${f} (${f.toLowerCase()})` });
      await fields.getByRole("button", { name: "Add", exact: true }).click();
      await fields.locator("li", { hasText: f }).waitFor();
    }
    await fields.getByRole("button", { name: "Move Width up" }).click();
    await fields.locator("li").first().getByText("Width", { exact: true }).waitFor();
    // Each added field got its component in the class's layout.
    await editor().locator(".layout-tree").getByText("Height").waitFor();
    await commitThroughDialog();
    const dims = await byName("classes", "dimensions");
    const w = await byName("fields", "width");
    const h = await byName("fields", "height");
    expect(dims.fields).toEqual([w.gid, h.gid]);

    await page
      .getByRole("navigation", { name: "Schema" })
      .getByRole("link", { name: /Fields/ })
      .click();
    await newField("size", "class", ["Size", "Maat"]);
    await editor()
      .getByLabel(/^Class/)
      .selectOption({ label: "Dimensions (dimensions)" });
    await editor().getByRole("button", { name: "Create field" }).click();
    await editor().getByRole("heading", { name: "Size" }).waitFor();
    await commitThroughDialog();
    expect((await byName("fields", "size")).options).toEqual({ class: dims.gid });
  });

  test("a definition gets a class, fields, a child definition and a layout edited by drag and keyboard", async () => {
    await page
      .getByRole("navigation", { name: "Schema" })
      .getByRole("link", { name: /Definitions/ })
      .click();
    await page.locator(".schema-list").getByRole("link", { name: "New definition" }).click();
    await editor().getByLabel(/^Name/).fill("article");
    await editor().getByLabel("Label (en)").fill("Article");
    await editor().getByLabel("Label (nl)").fill("Artikel");
    await editor().getByRole("button", { name: "Create definition" }).click();
    await editor().getByRole("heading", { name: "Article" }).waitFor();
    const classes = editor().locator('section[data-member="classes"]');
    await classes.getByLabel("Add a class").selectOption({ label: "Dimensions (dimensions)" });
    await classes.getByRole("button", { name: "Add", exact: true }).click();
    await classes.locator("li", { hasText: "Dimensions" }).waitFor();
    const fields = editor().locator('section[data-member="fields"]');
    for (const f of ["Color", "Size"]) {
      await fields.getByLabel("Add a field").selectOption({ label: `${f} (${f.toLowerCase()})` });
      await fields.getByRole("button", { name: "Add", exact: true }).click();
      await fields.locator("li", { hasText: f }).waitFor();
    }
    await editor().getByLabel("Title field").selectOption({ label: "Color" });
    await editor().getByRole("button", { name: "Save" }).click();

    // Layout: a section, the color field dragged into it, then moved by keyboard back out and in.
    const tree = editor().locator(".layout-tree");
    await tree.getByRole("button", { name: /^Add to vertical/ }).click();
    const add = page.getByRole("dialog");
    await add.getByLabel("Component type").selectOption("section");
    await add.getByLabel("Name").fill("Looks");
    await add.getByRole("button", { name: "Add component" }).click();
    await tree.getByRole("treeitem", { name: "section Looks" }).waitFor();
    const colorRow = tree.getByRole("treeitem", { name: "field Color" });
    await colorRow.dragTo(tree.getByRole("treeitem", { name: "section Looks" }));
    await tree.locator('li[data-type="section"]').getByRole("treeitem", { name: "field Color" }).waitFor();
    await tree.getByRole("treeitem", { name: "field Color" }).focus();
    await page.keyboard.press("Alt+ArrowLeft");
    await tree.locator('li[data-type="section"] li').waitFor({ state: "detached" });
    // Out of the section it sits right below it; Alt+↑ puts it above the section, Alt+↓ back,
    // and Alt+→ into the container above it. The moved row keeps the focus.
    const rootOrder = (expected: string[]) =>
      page.waitForFunction(
        `JSON.stringify([...document.querySelectorAll(".layout-tree > li > ul > li > .layout-row")].map((r) => r.getAttribute("aria-label"))) === ${JSON.stringify(JSON.stringify(expected))}`,
      );
    await rootOrder(["field Size", "section Looks", "field Color"]);
    await tree.getByRole("treeitem", { name: "field Color" }).focus();
    await page.keyboard.press("Alt+ArrowUp");
    await rootOrder(["field Size", "field Color", "section Looks"]);
    await page.keyboard.press("Alt+ArrowDown");
    await rootOrder(["field Size", "section Looks", "field Color"]);
    await page.keyboard.press("Alt+ArrowUp");
    await rootOrder(["field Size", "field Color", "section Looks"]);
    await tree.getByRole("treeitem", { name: "field Size" }).focus();
    await page.keyboard.press("Alt+ArrowDown");
    await rootOrder(["field Color", "field Size", "section Looks"]);
    await tree.getByRole("treeitem", { name: "section Looks" }).focus();
    await page.keyboard.press("Alt+ArrowUp");
    await rootOrder(["field Color", "section Looks", "field Size"]);
    // Two presses in one go: the second is made while the first saves, and both count.
    await altKeyTwice(tree.getByRole("treeitem", { name: "field Size" }), "ArrowUp");
    await rootOrder(["field Size", "field Color", "section Looks"]);
    await altKeyTwice(tree.getByRole("treeitem", { name: "field Size" }), "ArrowDown");
    await rootOrder(["field Color", "section Looks", "field Size"]);
    await tree.getByRole("treeitem", { name: "field Size" }).focus();
    await page.keyboard.press("Alt+ArrowRight");
    await tree.locator('li[data-type="section"]').getByRole("treeitem", { name: "field Size" }).waitFor();
    await rootOrder(["field Color", "section Looks"]);
    // And the color field joins it by drag and drop again, before Size.
    await tree
      .getByRole("treeitem", { name: "field Color" })
      .dragTo(tree.getByRole("treeitem", { name: "field Size" }));
    await rootOrder(["section Looks"]);
    await screenshot(page, "21-schema-definition-layout");
    await commitThroughDialog();

    // A child definition (itself: articles hold articles) is added after the commit, as a working copy.
    const children = editor().locator('section[data-member="childdefinitions"]');
    await children.getByLabel("Add a child definition").selectOption({ label: "Article (article)" });
    await children.getByRole("button", { name: "Add", exact: true }).click();
    await editor().locator(".lifecycle").getByText("Working copy").waitFor();
    // The project's fieldlist gets the color field (only the definition's own fields are offered).
    const fieldlist = editor().getByRole("region", { name: "Fieldlist: Main fieldlist" });
    await fieldlist.getByLabel("Add a field").selectOption({ label: "Color (color)" });
    await fieldlist.getByRole("button", { name: "Add", exact: true }).click();
    await fieldlist.locator("li", { hasText: "Color" }).waitFor();
    await commitThroughDialog();

    const def = await byName("definitions", "article");
    const color = await byName("fields", "color");
    const layout = (await server.call(`/api/p/${project}/layouts/get`, { token, body: { layout: def.layout } })).body
      .data.layouts[def.layout];
    const section = Object.entries(layout.components).find(([, c]: [string, any]) => c.type === "section")!;
    expect(section[1]).toMatchObject({ name: "Looks" });
    const inSection = (section[1] as any).content.map((g: string) => layout.components[g]);
    const size = await byName("fields", "size");
    expect(inSection).toEqual([
      { type: "field", options: { field: color.gid } },
      { type: "field", options: { field: size.gid } },
    ]);
    expect(def.childdefinitions).toEqual([def.gid]);
    expect(def.titlefield).toBe(color.gid);
    expect(def.classes).toHaveLength(1);
    expect(Object.values(def.fieldlists)).toEqual([[color.gid]]);
  });

  test("the dry run shows what a commit would drop; revert and save as new; the second browser follows live", async () => {
    // The definition's page (its member lists and layout tree) fits a 360 px wide phone.
    const def = await byName("definitions", "article");
    await other.goto(`${server.url}/console/p/${project}/schema?tab=definitions&item=${def.gid}`);
    await other.locator(".layout-tree").getByRole("treeitem", { name: "section Looks" }).waitFor();
    expect(Number(await other.evaluate("document.documentElement.scrollWidth"))).toBeLessThanOrEqual(360);
    await screenshot(other, "24-schema-definition-360px");

    // The second browser watches the definition list.
    await other.getByRole("link", { name: "← All definitions" }).click();
    const otherEntry = other.locator('.schema-entry[data-name="article"]');
    await otherEntry.waitFor();
    expect(await otherEntry.locator(".badge").count()).toBe(0);

    // Removing the class makes a working copy: the other browser shows the badge.
    const classes = editor().locator('section[data-member="classes"]');
    await classes.getByRole("button", { name: "Remove Dimensions" }).click();
    await editor().locator(".lifecycle").getByText("Working copy").waitFor();
    await otherEntry.getByText("Working copy").waitFor();

    // The dry run names what the commit would drop; cancelling keeps everything.
    await editor().locator(".lifecycle").getByRole("button", { name: "Commit…" }).click();
    const preview = page.getByRole("dialog").getByTestId("commit-preview");
    await preview.getByText("classes").waitFor();
    await preview
      .locator(".would-drop")
      .getByText(/Article.*loses Width, Height/)
      .waitFor();
    await screenshot(page, "22-schema-commit-dry-run");
    await page.getByRole("dialog").getByRole("button", { name: "Cancel" }).click();
    expect((await byName("definitions", "article")).classes).toHaveLength(1);

    // Revert: the working copy is gone in both browsers.
    await editor().locator(".lifecycle").getByRole("button", { name: "Revert" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Revert" }).click();
    await editor().locator(".lifecycle").getByText("Committed", { exact: true }).waitFor();
    await classes.locator("li", { hasText: "Dimensions" }).waitFor();
    await otherEntry.getByText("Working copy").waitFor({ state: "detached" });

    // Save as new: a label change becomes a definition of its own; the original is untouched.
    await editor().getByLabel("Label (en)").fill("Article variant");
    await editor().getByRole("button", { name: "Save as working copy" }).click();
    await otherEntry.getByText("Article variant").waitFor();
    await editor().locator(".lifecycle").getByRole("button", { name: "Save as new" }).click();
    await editor().getByRole("heading", { name: "Article variant" }).waitFor();
    await editor().locator(".lifecycle").getByText("Committed", { exact: true }).waitFor();
    await other.locator('.schema-entry[data-name="article_2"]').getByText("Article variant").waitFor();
    await otherEntry.getByText("Article", { exact: true }).waitFor();
    const defs = await items("definitions");
    // (base: the root record's definition, which every project has from the start.)
    expect(defs.map((d) => [d.name, d.label.en, d.is_working_copy]).sort()).toEqual([
      ["article", "Article", false],
      ["article_2", "Article variant", false],
      ["base", undefined, false],
    ]);

    // A field change shows live in the other browser's open editor.
    await other.goto(`${server.url}/console/p/${project}/schema?tab=fields`);
    await other.locator('.schema-entry[data-name="width"]').getByRole("link").click();
    await other.getByLabel("Unit").waitFor();
    expect(await other.getByLabel("Unit").inputValue()).toBe("cm");
    await page
      .getByRole("navigation", { name: "Schema" })
      .getByRole("link", { name: /Fields/ })
      .click();
    await page.locator('.schema-entry[data-name="width"]').getByRole("link").click();
    await editor().getByLabel("Unit").fill("mm");
    await editor().getByRole("button", { name: "Save as working copy" }).click();
    await other.locator(".lifecycle").getByText("Working copy").waitFor();
    await other.waitForFunction("document.querySelector('input[name=unit]')?.value === 'mm'");
    await screenshot(other, "23-schema-field-360px");
    // Narrow screens: nothing wider than the viewport.
    expect(Number(await other.evaluate("document.documentElement.scrollWidth"))).toBeLessThanOrEqual(360);
    await commitThroughDialog();
    expect((await byName("fields", "width")).unit).toBe("mm");
    await other.locator(".lifecycle").getByText("Committed", { exact: true }).waitFor();

    // A field still in use is not deleted: the server's reason is shown as a message.
    await editor().locator(".lifecycle").getByRole("button", { name: "Delete" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await page
      .locator(".notice.error")
      .getByText(/The field is in use/)
      .waitFor();
    expect(await byName("fields", "width")).toBeTruthy();

    expect(errors).toEqual([]);
    expect(otherErrors).toEqual([]);
  });

  test("a reverted working copy does not come back from a re-read that was asked for before the revert", async () => {
    const made = await server.call(`/api/p/${project}/fields/create`, {
      token,
      body: { name: "gloss", type: "textline", label: { en: "Gloss" } },
    });
    const gid = made.body.result.field as string;
    expect((await server.call(`/api/p/${project}/fields/commit`, { token, body: { field: gid } })).status).toBe(200);
    // The sync frames the page receives (its socket opens with the page).
    const frames: string[] = [];
    page.on("websocket", (ws) => ws.on("framereceived", (f) => frames.push(String(f.payload))));
    await page.goto(`${server.url}/console/p/${project}/schema?tab=fields&item=${gid}`);
    await editor().getByRole("heading", { name: "Gloss" }).waitFor();
    // The page's first read of named fields (after a sync item) is answered only when the test
    // says so, with what the server answered when it was asked; later reads go through.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const reads = await holdReads(page, `**/api/p/${project}/fields/get`, held, (n) => n === 1);
    const lifecycle = editor().locator(".lifecycle");
    // Saving makes a working copy; its sync item sends a read of it, which is held.
    await editor().getByLabel("Label (en)").fill("Gloss level");
    await editor().getByRole("button", { name: "Save as working copy" }).click();
    await lifecycle.getByText("Working copy").waitFor();
    await until(() => reads.fetched >= 1, undefined, "the working copy's re-read answered by the server");
    // Reverted while that read still holds the working copy.
    await lifecycle.getByRole("button", { name: "Revert" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Revert" }).click();
    await lifecycle.getByText("Committed", { exact: true }).waitFor();
    // From now on, every time the editor shows the working copy's badge is counted.
    await page.evaluate(`(() => {
      window.badgeBack = 0;
      const editor = document.querySelector(".schema-editor");
      new MutationObserver(() => {
        if (editor.querySelector(".lifecycle")?.textContent?.includes("Working copy")) window.badgeBack++;
      }).observe(editor, { childList: true, subtree: true, characterData: true });
    })()`);
    // The revert's sync item (the working copy deleted) has reached the page: the held read's
    // answer now comes after it.
    await until(
      () => frames.some((f) => f.includes('"DELETE"') && f.includes('"fields"')),
      undefined,
      "the revert's sync item",
    );
    release();
    await until(() => reads.answered === reads.asked, undefined, "the held read's answer");
    await reads.unroute();
    // The answer read and shown, and the revert's item taken in (gathered for 40 ms): the page
    // settles on the committed field.
    await lifecycle.getByText("Working copy").waitFor({ state: "detached" });
    expect(Number(await page.evaluate("window.badgeBack"))).toBe(0);
    expect(await lifecycle.getByText("Committed", { exact: true }).count()).toBe(1);
    expect(await editor().getByLabel("Label (en)").inputValue()).toBe("Gloss");
    expect((await items("fields")).filter((f) => f.name === "gloss")).toHaveLength(1);
    expect(errors).toEqual([]);
  });
});
