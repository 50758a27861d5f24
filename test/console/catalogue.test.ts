// The console as a product manager's tool (issue 35), in headless Chromium: an outdoor-gear
// catalogue in two languages, its records made with the questions asked first, images picked and
// uploaded in the form, messages written for people (numbers read in a German browser), the
// children as a product grid with completeness, searches built from lists and saved, quiet
// notices, safer settings, previews that say why they are missing, a phone-sized screen and the
// keyboard. The schema and the first assets are made through the API; steps build on each other.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import sharp from "sharp";
import { TestServer, until } from "../helpers/server";
import { CHROMIUM, launch, screenshot, watchErrors } from "./browser";

setDefaultTimeout(120_000);

const png = (color: string, width = 300, height = 200) =>
  sharp({ create: { width, height, channels: 3, background: color } })
    .png()
    .toBuffer();

describe.skipIf(!CHROMIUM)("web console: the catalogue of a product manager", () => {
  let server: TestServer;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let errors: string[];
  let token = "";
  let project = "";
  let root = "";
  let article = "";
  let tent = "";
  let stove = "";
  const assets: Record<string, string> = {};

  async function api(path: string, body: Record<string, unknown> = {}): Promise<any> {
    const r = await server.call(`/api/p/${project}/${path}`, { token, body });
    if (r.status !== 200 || !r.body.success) throw new Error(`${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }
  const record = async (gid: string) => (await api("records/get", { record: gid })).data.records[gid];
  async function upload(content: Uint8Array | string, name: string, parent?: string): Promise<string> {
    const form = new FormData();
    form.append("upload_file", new Blob([content]), name);
    if (parent) form.append("parent", parent);
    else form.append("pathname", "/");
    const r = await server.call(`/api/p/${project}/assets/upload`, { body: form, token });
    if (r.status !== 200) throw new Error(`upload ${name}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.result.asset;
  }
  async function signIn(p: Page, username = "paula", password = "paulas-secret-1") {
    await p.goto(server.url + "/");
    await p.getByLabel("Username").fill(username);
    await p.getByLabel("Password").fill(password);
    await p.getByRole("button", { name: "Sign in" }).click();
    await p.getByRole("heading", { name: "Projects", exact: true }).waitFor();
  }
  const editor = (gid: string) => `${server.url}/console/p/${project}/records?record=${gid}&view=record`;

  beforeAll(async () => {
    // A low pixel limit, so that one image of the catalogue is too large to preview.
    server = await TestServer.start({ "pixel-limit": "200000" });
    const paula = await server.user("paula", "paulas-secret-1");
    token = paula.token;
    project = await server.project(token, "Outdoor gear");
    await api("languages/add", { language: "de" });
    await api("channels/create", { name: "Webshop" });
    const fields: Record<string, string> = {};
    const field = async (name: string, type: string, extra: Record<string, unknown>) => {
      fields[name] = (await api("fields/create", { name, type, ...extra })).result.field;
      await api("fields/commit", { field: fields[name] });
    };
    await field("name", "textline", { is_localized: true, is_required: true, label: { en: "Name", de: "Name" } });
    await field("price", "decimal", { options: { min: 0, decimals: 2 }, label: { en: "Price" } });
    await field("stock", "number", { label: { en: "Stock" } });
    await field("photo", "image", { is_required: true, label: { en: "Photo" } });
    await field("material", "textline", {
      label: { en: "Material" },
      options: {
        values: [
          { key: "nylon", label: { en: "Nylon", de: "Nylon" } },
          { key: "steel", label: { en: "Steel", de: "Stahl" } },
        ],
      },
    });
    await field("accessories", "recordlist", { label: { en: "Accessories" } });
    article = (
      await api("definitions/create", {
        name: "article",
        label: { en: "Article" },
        fields: [fields.name, fields.price, fields.stock, fields.photo, fields.material, fields.accessories],
        titlefield: fields.name,
      })
    ).result.definition;
    // A fieldlist for the shop shows the price only.
    const shop = (await api("fieldlists/create", { name: "Shop" })).result.fieldlist;
    await api("definitions/fieldlists/fields/add", { definition: article, fieldlist: shop, field: fields.price });
    await api("definitions/commit", { definition: article });
    await api("definitions/create", {
      name: "note",
      label: { en: "Note" },
      fields: [fields.name],
      titlefield: fields.name,
    });
    root = (await api("records/root")).result.root;
    const base = (await record(root)).definition;
    await api("definitions/childdefinitions/add", { definition: base, childdefinition: article });
    await api("definitions/commit", { definition: base });

    assets.tent = await upload(await png("#2a8a5a"), "trail-tent-2p-front.jpg");
    assets.stove = await upload(await png("#2a5a8a"), "camp-stove.png");
    assets.huge = await upload(await png("#8a5a2a", 700, 400), "panorama.png");
    assets.fake = await upload("this is not a picture", "fake.jpg");
    // A folder with one picture in it.
    assets.folder = (await api("assets/create", { name: "Lifestyle" })).result.asset;
    assets.inFolder = await upload(await png("#8a2a5a"), "lifestyle-camp.png", assets.folder);

    // One record made through the API, complete in English only.
    stove = (await api("records/create", { parent: root })).result.record;
    await api("records/definition/set", { record: stove, definition: article });
    await api("records/update", {
      record: stove,
      fields: { en: { name: "Camp stove", photo: assets.stove, material: "steel", price: 40 } },
    });

    browser = await launch();
    // A German browser: numbers are typed the German way.
    ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, locale: "de-DE" });
    page = await ctx.newPage();
    errors = watchErrors(page);
    await signIn(page);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  test("New child asks for the definition (the parent's child definitions first) and the title before anything is created", async () => {
    await page.goto(editor(root));
    const before = (await record(root)).childcount;
    await page.getByRole("button", { name: "New child" }).click();
    const ask = page.getByRole("dialog", { name: "New record" });
    await ask.waitFor();
    // Nothing is made until the questions are answered.
    expect((await record(root)).childcount).toBe(before);
    const offered = await ask.locator('optgroup[label="Offered here"] option').allTextContents();
    expect(offered).toEqual(["Article"]);
    expect(await ask.getByLabel("Definition").inputValue()).toBe(article);
    await ask.getByLabel("Name (en)").fill("Trail tent 2P");
    await ask.getByRole("button", { name: "Create" }).click();
    await page.getByTestId("record-title").getByText("Trail tent 2P").waitFor();
    tent = new URL(page.url()).searchParams.get("record")!;
    const r = await record(tent);
    expect(r.definition).toBe(article);
    expect(r.fields.en.name).toBe("Trail tent 2P");
  });

  test("an image field is chosen in a picker with thumbnails, search by name, folders and upload in place, and shows as a thumbnail", async () => {
    await page.getByRole("button", { name: "Choose image for Photo" }).click();
    const picker = page.getByRole("dialog", { name: /Choose image: Photo/ });
    // The library: every image as a tile; the text file named .jpg cannot be chosen for an image field.
    await picker.getByRole("button", { name: "camp-stove.png" }).waitFor();
    expect(await picker.getByRole("button", { name: "fake.jpg" }).isDisabled()).toBe(true);
    // Folders open in place, and the trail leads back.
    await picker.getByRole("button", { name: "Open folder Lifestyle" }).click();
    await picker.getByRole("button", { name: "lifestyle-camp.png" }).waitFor();
    await picker.getByRole("button", { name: "camp-stove.png" }).waitFor({ state: "detached" });
    await picker.getByRole("navigation", { name: "Folder" }).getByRole("button", { name: "All assets" }).click();
    await picker.getByRole("button", { name: "camp-stove.png" }).waitFor();
    await picker.getByLabel("Search assets by name").fill("tent");
    await picker.getByText("Results for “tent”").waitFor();
    await picker.getByRole("button", { name: "camp-stove.png" }).waitFor({ state: "detached" });
    await picker.getByRole("button", { name: "trail-tent-2p-front.jpg" }).click();
    await screenshot(page, "35-01-asset-picker");
    await picker.getByRole("button", { name: "Use this one" }).click();
    await picker.waitFor({ state: "detached" });
    // The choice is shown as a thumbnail with its name, and saved as the asset's gid.
    const chosen = page.locator('[data-field="photo"] .picked-item');
    await chosen.getByText("trail-tent-2p-front.jpg").waitFor();
    await chosen.locator("img.thumb").waitFor();
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByText("Saved", { exact: true }).waitFor();
    expect((await record(tent)).fields.en.photo).toBe(assets.tent);

    // A new file is uploaded from the picker and chosen at once.
    await page.getByRole("button", { name: "Choose image for Photo" }).click();
    await picker.getByRole("button", { name: "camp-stove.png" }).waitFor();
    await picker.getByLabel("Upload a new file here").setInputFiles({
      name: "tent-side.png",
      mimeType: "image/png",
      buffer: await png("#5a8a2a"),
    });
    await picker.getByRole("button", { name: "tent-side.png", pressed: true }).waitFor();
    await picker.getByRole("button", { name: "Use this one" }).click();
    await page.locator('[data-field="photo"] .picked-item').getByText("tent-side.png").waitFor();
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByText("Saved", { exact: true }).waitFor();
    const uploaded = (await api("assets/search", { q: "tent-side" })).result.assets[0];
    expect((await record(tent)).fields.en.photo).toBe(uploaded);
    // The record's head says how complete it is: everything required in English, the German name missing.
    await page.locator('.record-head .badge[data-lang="en"]').getByText("en 100%").waitFor();
    await page.locator('.record-head .badge[data-lang="de"]').getByText("de 50%").waitFor();
    expect(await page.locator('.record-head .badge[data-lang="de"]').getAttribute("title")).toBe("Missing in de: name");
    await screenshot(page, "35-02-record-with-image");
  });

  test("values are read the way a German types numbers, and refused ones are explained in words for people", async () => {
    await page.getByLabel("Price").fill("1.850,5");
    await page.getByLabel("Stock").fill("2,5");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.locator('[data-field="stock"] .field-error').getByText("Enter a whole number").waitFor();
    expect((await record(tent)).fields.en.price).toBe(1850.5);
    await page.getByLabel("Stock").fill("viele");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page
      .locator('[data-field="stock"] .field-error')
      .getByText("Stock must be a whole number, like 1.850")
      .waitFor();
    await page.getByLabel("Stock").fill("1.850");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.locator('[data-field="stock"] .field-error').waitFor({ state: "detached" });
    expect((await record(tent)).fields.en.stock).toBe(1850);
    // No message shows the validator's own words.
    expect(await page.locator(".field-error").count()).toBe(0);
  });

  test("a field pointing at records is chosen by searching their titles", async () => {
    await page.getByRole("button", { name: "Choose record for Accessories" }).click();
    const picker = page.getByRole("dialog", { name: /Choose record: Accessories/ });
    await picker.getByLabel("Search records").fill("stove");
    await picker.getByRole("button", { name: "Camp stove" }).click();
    await picker.waitFor({ state: "detached" });
    await page.locator('[data-field="accessories"] .picked-item').getByText("Camp stove").waitFor();
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.getByText("Saved", { exact: true }).waitFor();
    // The "Saved" of the save before may still show: the stored value is what tells.
    await until(
      async () => JSON.stringify((await record(tent)).fields.en.accessories) === JSON.stringify([stove]),
      undefined,
      "the accessories saved",
    );
  });

  test("values that are the same in all languages are said so once per section, not after every field", async () => {
    const form = page.getByRole("form", { name: "Values" });
    expect(await form.getByText("all languages", { exact: false }).count()).toBe(1);
    await form.getByText("Same in all languages: Price, Stock, Photo, Material, Accessories").waitFor();
  });

  test("success notices come one at a time and go by themselves; an error stays until it is dismissed", async () => {
    for (const n of ["Tent A", "Tent B"]) {
      await page.getByLabel("Name (de)").fill(n);
      await page.getByRole("button", { name: "Save", exact: true }).click();
      await page.getByLabel("Name (de)").and(page.locator(":not([aria-invalid])")).waitFor();
    }
    expect(await page.locator(".notice.info").count()).toBeLessThanOrEqual(1);
    // The notices sit at the top, never over the Save button.
    const notice = await page.locator(".notices").boundingBox();
    const save = await page.getByRole("button", { name: "Save", exact: true }).boundingBox();
    expect(notice && save && (notice.y + notice.height <= save.y || notice.y >= save.y + save.height)).toBe(true);
    // A refused value leaves an error notice; a success notice after it goes, the error stays.
    await page.getByLabel("Stock").fill("-");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    const error = page.locator(".notice.error");
    await error.waitFor();
    await page.getByLabel("Stock").fill("3");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await page.locator(".notice.info").getByText("Saved").waitFor();
    await page.locator(".notice.info").waitFor({ state: "detached" });
    expect(await error.isVisible()).toBe(true);
    await error.getByRole("button", { name: "Dismiss" }).click();
    await error.waitFor({ state: "detached" });
  });

  test("the children are a product grid: thumbnails, completeness per language, sort, filters, and a selection for the bulk actions", async () => {
    await page.goto(`${server.url}/console/p/${project}/records?record=${root}&view=children`);
    const grid = page.getByRole("table", { name: "Worksheet" });
    const tentRow = grid.locator(`tr[data-record="${tent}"]`);
    const stoveRow = grid.locator(`tr[data-record="${stove}"]`);
    // The tent has every required field in both languages (the name in de was saved above); the stove lacks its German name.
    await tentRow.locator('.badge[data-lang="en"]').getByText("en 100%").waitFor();
    await tentRow.locator('.badge[data-lang="de"]').getByText("de 100%").waitFor();
    await stoveRow.locator('.badge[data-lang="de"]').getByText("de 50%").waitFor();
    await tentRow.locator(".thumb-col img.thumb").waitFor();
    await stoveRow.locator(".thumb-col img.thumb").waitFor();
    await page.getByTestId("grid-complete").getByText("Complete: en 2/2 · de 1/2").waitFor();
    await screenshot(page, "35-03-product-grid");

    // Sorted by title, both ways.
    const titles = () => grid.locator("tbody th[scope=row] a").allTextContents();
    await grid.getByRole("button", { name: "Title" }).click();
    expect(await titles()).toEqual(["Camp stove", "Trail tent 2P"]);
    await grid.getByRole("button", { name: "Title" }).click();
    expect(await titles()).toEqual(["Trail tent 2P", "Camp stove"]);

    // Filtered by completeness in German (the grid's language switched to de), by definition and by words.
    await page.getByLabel("Worksheet language").selectOption("de");
    await page.getByLabel("Filter by completeness").selectOption("incomplete");
    await page.getByTestId("grid-count").getByText("1 of 2 shown").waitFor();
    await stoveRow.waitFor();
    expect(await tentRow.count()).toBe(0);
    await page.getByLabel("Worksheet language").selectOption("en");
    await page.getByLabel("Filter by completeness").selectOption("");
    await page.getByLabel("Filter by title").fill("stove");
    await page.getByTestId("grid-count").getByText("1 of 2 shown").waitFor();
    await page.getByRole("button", { name: "Select the 1 shown" }).click();
    await page.getByRole("region", { name: "Bulk actions" }).getByText("1 selected").waitFor();
    await page.getByRole("button", { name: "Clear filters" }).click();
    await stoveRow.waitFor();
    await tentRow.waitFor();

    // Columns: picked one by one, or those of a fieldlist.
    const heads = () => grid.locator("thead th").allTextContents();
    expect((await heads()).join("|")).toContain("Stock");
    await page.getByLabel("Columns of a fieldlist").selectOption({ label: "Fieldlist: Shop" });
    expect((await heads()).filter((h) => /Name|Price|Stock|Photo|Material/.test(h))).toEqual(["Price"]);
    await page.getByLabel("Columns of a fieldlist").selectOption({ label: "Columns picked" });
    await page.getByText("Columns", { exact: true }).click();
    await page.locator(".columns-pick").getByLabel("Stock").uncheck();
    expect((await heads()).join("|")).not.toContain("Stock");
  });

  test("completeness per channel: with a channel chosen, records outside it are left out of the grid", async () => {
    await page.getByLabel("Channel", { exact: true }).selectOption({ label: "Webshop" });
    await page.getByRole("table", { name: "Worksheet" }).locator("tbody tr").first().waitFor({ state: "detached" });
    await api("records/channels/set", { record: stove, channels: [await webshopKey()], enabled: true });
    await page.getByRole("table", { name: "Worksheet" }).locator(`tr[data-record="${stove}"]`).waitFor();
    await page.getByLabel("Channel", { exact: true }).selectOption({ label: "All records" });
  });
  async function webshopKey(): Promise<string> {
    const form = (await server.call("/api/projects/get", { token, body: { project } })).body.data["cc.projects"][
      project
    ];
    return Object.entries(form.options.channels as Record<string, string>).find(([, n]) => n === "Webshop")![0];
  }

  test("a member watching the grid sees a record's completeness change as its values are filled elsewhere", async () => {
    const mia = await server.user("mia", "mias-secret-1");
    await server.addMember(project, mia.gid);
    const other = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const m = await other.newPage();
    const miaErrors = watchErrors(m);
    await signIn(m, "mia", "mias-secret-1");
    await m.goto(`${server.url}/console/p/${project}/records?record=${root}&view=children`);
    const row = m.getByRole("table", { name: "Worksheet" }).locator(`tr[data-record="${stove}"]`);
    await row.locator('.badge[data-lang="de"]').getByText("de 50%").waitFor();
    await api("records/update", { record: stove, fields: { de: { name: "Campingkocher" } } });
    // No reload: the sync item brings the record, and its completeness is asked again.
    await row.locator('.badge[data-lang="de"]').getByText("de 100%").waitFor();
    await m.getByTestId("grid-complete").getByText("Complete: en 2/2 · de 2/2").waitFor();
    expect(miaErrors).toEqual([]);
    await other.close();
  });

  test("records are searched with conditions picked from lists, and the search is saved as a query", async () => {
    await page.goto(`${server.url}/console/p/${project}/records?record=${root}&view=search`);
    await page.getByRole("button", { name: "Add a condition" }).click();
    await page.getByLabel("Condition 1: property").selectOption({ label: "Material" });
    // A value list is a drop-down of its labels.
    const values = await page.getByLabel("Condition 1: value").locator("option").allTextContents();
    expect(values).toEqual(["Choose…", "Nylon", "Steel"]);
    await page.getByLabel("Condition 1: value").selectOption({ label: "Steel" });
    await page.getByRole("button", { name: "Add a condition" }).click();
    await page.getByLabel("Condition 2: property").selectOption({ label: "Changed" });
    expect(await page.getByLabel("Condition 2: value").getAttribute("type")).toBe("date");
    await page.getByLabel("Condition 2: value").fill("2000-01-01");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    const hits = page.getByRole("list", { name: "Search results" });
    await hits.getByRole("link", { name: "Camp stove" }).waitFor();
    expect(await hits.getByRole("listitem").count()).toBe(1);
    await hits.locator(".row-thumb img.thumb").waitFor();
    await screenshot(page, "35-04-search-conditions");

    await page.getByRole("button", { name: "Save as query" }).click();
    await page.getByLabel("Query name").fill("Steel articles");
    const saved = page.waitForResponse((r) => r.url().endsWith("/queries/create"));
    await page.getByRole("button", { name: "Save", exact: true }).click();
    const gid = (await (await saved).json()).result.query;
    await page.getByText("Query “Steel articles” saved").waitFor();
    const q = (await api("queries/get", { query: gid })).data.queries[gid];
    expect(q.name).toBe("Steel articles");
    expect(JSON.stringify(q.filter)).toContain('"steel"');

    // The hit opens in the editor.
    await hits.getByRole("link", { name: "Camp stove" }).click();
    await page.getByTestId("record-title").getByText("Camp stove").waitFor();
  });

  test("assets are searched with conditions too, and previews that cannot be made say why", async () => {
    await page.goto(`${server.url}/console/p/${project}/assets`);
    await page.locator(".search-conditions > summary").click();
    await page.getByRole("button", { name: "Add a condition" }).click();
    await page.getByLabel("Condition 1: property").selectOption({ label: "Width (px)" });
    await page.getByLabel("Condition 1: operator").selectOption({ label: "more than" });
    await page.getByLabel("Condition 1: value").fill("500");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await page.getByRole("heading", { name: "Search: 1 condition" }).waitFor();
    const huge = page.locator(`li[data-asset="${assets.huge}"]`);
    await huge.waitFor();
    // The folder's tiles stay until the search answers: wait for the one match alone.
    await page.waitForFunction('document.querySelectorAll("li.tile").length === 1');
    // Over the pixel limit: its size and why there is no picture.
    await huge.getByText("700×400 px, too large to preview").waitFor();

    await page.goto(`${server.url}/console/p/${project}/assets`);
    await page.locator(`li[data-asset="${assets.fake}"]`).getByText("TXT file, named .jpg").waitFor();
    await screenshot(page, "35-05-assets-previews");
  });

  test("two channels of the same name are refused in the settings, and a double click creates one", async () => {
    await page.goto(`${server.url}/console/p/${project}/settings`);
    const channels = page.locator('section[data-setting="channel"]');
    await channels.getByLabel("New channel").fill("webshop ");
    await channels.getByText("There is already a channel named “webshop”").waitFor();
    expect(await channels.getByRole("button", { name: "Create channel" }).isDisabled()).toBe(true);
    await channels.getByLabel("New channel").fill("Catalogue");
    await channels.getByRole("button", { name: "Create channel" }).dblclick();
    await channels.getByRole("list", { name: "Channels" }).getByText("Catalogue", { exact: true }).waitFor();
    await page.getByText("Catalogue created").waitFor();
    const form = (await server.call("/api/projects/get", { token, body: { project } })).body.data["cc.projects"][
      project
    ];
    expect(
      Object.values(form.options.channels as Record<string, string>).filter((n) => n === "Catalogue"),
    ).toHaveLength(1);
  });

  test("dialogs keep the focus inside, close on Escape and give the focus back; every step works from the keyboard", async () => {
    await page.goto(editor(tent));
    await page.getByTestId("record-title").getByText("Trail tent 2P").waitFor();
    const opener = page.getByRole("button", { name: "New child" });
    await opener.focus();
    await page.keyboard.press("Enter");
    const ask = page.getByRole("dialog", { name: "New record" });
    await ask.waitFor();
    // The focus is visible and stays in the dialog however far one tabs.
    for (let i = 0; i < 8; i++) {
      await page.keyboard.press("Tab");
      expect(await ask.evaluate((d) => d.contains(d.ownerDocument.activeElement))).toBe(true);
    }
    expect(await page.evaluate("document.activeElement.matches(':focus-visible')")).toBe(true);
    await page.keyboard.press("Escape");
    await ask.waitFor({ state: "detached" });
    // The focus goes back once the dialog has closed (a task of its own): waited for, not assumed.
    await opener.evaluate(
      (b) =>
        new Promise<void>((resolve) => {
          const check = () =>
            b === b.ownerDocument.activeElement ? resolve() : b.ownerDocument.defaultView?.requestAnimationFrame(check);
          check();
        }),
    );
    expect(await opener.evaluate((b) => b === b.ownerDocument.activeElement)).toBe(true);

    // The image picker from the keyboard: open, search, choose, use.
    await page.getByRole("button", { name: "Choose image for Photo" }).focus();
    await page.keyboard.press("Enter");
    const picker = page.getByRole("dialog", { name: /Choose image: Photo/ });
    await picker.getByLabel("Search assets by name").waitFor();
    await page.keyboard.type("stove");
    await picker.getByRole("button", { name: "camp-stove.png" }).focus();
    await page.keyboard.press("Enter");
    await picker.getByRole("button", { name: "Use this one" }).focus();
    await page.keyboard.press("Enter");
    await page.locator('[data-field="photo"] .picked-item').getByText("camp-stove.png").waitFor();
    await page.getByRole("button", { name: "Discard changes" }).click();
  });

  test("at phone width the project's sections fold into a menu, forms are one column and the pages stay usable", async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    const p = await phone.newPage();
    const phoneErrors = watchErrors(p);
    await signIn(p);
    await p.goto(editor(tent));
    await p.getByTestId("record-title").getByText("Trail tent 2P").waitFor();
    const nav = p.getByRole("navigation", { name: "Project" });
    expect(await nav.getByRole("link", { name: "Assets" }).isVisible()).toBe(false);
    const menu = nav.getByRole("button", { name: /Records/ });
    expect(await menu.getAttribute("aria-expanded")).toBe("false");
    // One column: the German name sits under the English one.
    const en = await p.getByLabel("Name (en)").boundingBox();
    const de = await p.getByLabel("Name (de)").boundingBox();
    expect(en && de && de.y > en.y + en.height - 1).toBe(true);
    expect(await p.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")).toBe(true);
    await screenshot(p, "35-06-phone-record");
    for (const section of ["Assets", "Schema", "Members", "Settings", "Records"]) {
      await nav.getByRole("button", { expanded: false }).click();
      await nav.getByRole("link", { name: section }).click();
      await p
        .getByRole("heading", { level: 1, name: section === "Assets" ? "Assets" : section })
        .first()
        .waitFor();
      expect(await nav.getByRole("link", { name: section }).isVisible()).toBe(false);
    }
    await screenshot(p, "35-07-phone-records");
    expect(phoneErrors).toEqual([]);
    await phone.close();
  });

  test("the page stayed healthy", () => {
    expect(errors).toEqual([]);
  });
});
