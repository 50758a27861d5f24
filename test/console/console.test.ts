// The web console end to end: a real server, a real SMTP catcher and headless Chromium with two
// browser contexts (an owner and an invited member). Steps build on each other, in order.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, BrowserContext, Page, Request } from "playwright-core";
import sharp from "sharp";
import { TestServer } from "../helpers/server";
import { codeOf, TestSmtp } from "../helpers/smtp";
import { CHROMIUM, launch, screenshot, watchErrors } from "./browser";

async function png(color: { r: number; g: number; b: number }, width = 400, height = 300): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: color } })
    .png()
    .toBuffer();
}

// A browser on a busy 2-core machine: generous limits; every wait is for a condition.
setDefaultTimeout(120_000);

describe.skipIf(!CHROMIUM)("web console", () => {
  let server: TestServer;
  let smtp: TestSmtp;
  let browser: Browser;
  let ownerCtx: BrowserContext;
  let memberCtx: BrowserContext;
  let owner: Page;
  let member: Page;
  let ownerErrors: string[];
  let memberErrors: string[];
  let projectGid = "";
  const transformRequests: string[] = [];

  beforeAll(async () => {
    smtp = await TestSmtp.start();
    server = await TestServer.start({ "smtp-url": smtp.url });
    browser = await launch();
    // The owner works on a HiDPI screen: thumbnails must be rendered at twice the size.
    ownerCtx = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 2 });
    memberCtx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    owner = await ownerCtx.newPage();
    member = await memberCtx.newPage();
    ownerErrors = watchErrors(owner);
    memberErrors = watchErrors(member);
    owner.on("request", (r: Request) => {
      if (r.url().includes("/transform/")) transformRequests.push(r.url());
    });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await smtp?.stop();
  });

  test("the landing page is the sign-in form, served by the server itself", async () => {
    await owner.goto(server.url + "/");
    await owner.getByRole("heading", { name: "Sign in" }).waitFor();
    await screenshot(owner, "01-sign-in");
  });

  test("a new visitor signs up with the code mailed to them and lands on an empty project list", async () => {
    await owner.getByRole("link", { name: "Create an account" }).click();
    await owner.getByLabel("Username").fill("olivia");
    await owner.getByLabel("Email").fill("olivia@example.test");
    await owner.getByLabel("Password").fill("short");
    await owner.getByRole("button", { name: "Send me a code" }).click();
    // The server's validation report is shown next to the field.
    await owner.getByText("At least 8 and at most 256 characters").waitFor();
    await owner.getByLabel("Password").fill("correct-horse-1");
    const since = smtp.messages.length;
    await owner.getByRole("button", { name: "Send me a code" }).click();
    const mail = await smtp.next("olivia@example.test", since);
    await owner.getByLabel("Code from the mail").fill(codeOf(mail));
    await owner.getByRole("button", { name: "Create account" }).click();
    await owner.getByRole("heading", { name: "Projects", exact: true }).waitFor();
    await owner.getByText("No projects yet").waitFor();
    // Only the JWT is kept in the browser's storage.
    const stored = JSON.parse(await owner.evaluate("JSON.stringify(Object.keys(localStorage))"));
    expect(stored).toEqual(["apis.jwt"]);
  });

  test("the owner creates a project and sees its empty asset folder", async () => {
    await owner.getByLabel("Name").fill("Catalogue");
    await owner.getByRole("button", { name: "Create project" }).click();
    await owner.getByRole("heading", { name: "Assets", exact: true }).waitFor();
    projectGid = /\/console\/p\/([0-9a-z]+)\//.exec(owner.url())![1]!;
    await owner.getByText("This folder is empty").waitFor();
  });

  test("an invited person opens the mailed link in a second browser, signs up with the invited address and joins", async () => {
    await owner.getByRole("link", { name: "Members" }).click();
    await owner.getByRole("heading", { name: "Members", exact: true }).waitFor();
    const since = smtp.messages.length;
    await owner.getByLabel("Email").fill("bob@example.test");
    await owner.getByRole("button", { name: "Send invitation" }).click();
    await owner.getByText("Invitation sent to bob@example.test").waitFor();
    await owner.locator(".row-item", { hasText: "bob@example.test" }).getByText("Invited").waitFor();
    await screenshot(owner, "03-members");

    const invitation = await smtp.next("bob@example.test", since);
    const link = new URL(/(https?:\/\/\S+\/invite\?\S+)/.exec(invitation.text)![1]!.replace(/[>)\].,]+$/, ""));
    await member.goto(server.url + link.pathname + link.search);
    await member.getByText("invites you to the project").waitFor();
    await member.getByText("Catalogue").first().waitFor();
    await member.getByRole("link", { name: "Create an account" }).click();
    await member.getByLabel("Username").fill("bob");
    await member.getByLabel("Email").fill("bob@example.test");
    await member.getByLabel("Password").fill("bobs-secret-2");
    const before = smtp.messages.length;
    await member.getByRole("button", { name: "Send me a code" }).click();
    const code = codeOf(await smtp.next("bob@example.test", before));
    await member.getByLabel("Code from the mail").fill(code);
    await member.getByRole("button", { name: "Create account" }).click();
    // Back on the invitation, now signed in as the invitee.
    await member.getByRole("button", { name: "Accept and open the project" }).click();
    await member.getByRole("heading", { name: "Assets", exact: true }).waitFor();
    expect(member.url()).toContain(`/console/p/${projectGid}/assets`);

    // The owner's member list turns bob active by itself.
    await owner.locator(".row-item", { hasText: "bob" }).getByText("Active").waitFor();
  });

  test("uploaded images appear in both browsers as thumbnails rendered at the screen's pixel ratio", async () => {
    await owner.getByRole("link", { name: "Assets" }).click();
    await owner.getByRole("heading", { name: "Assets", exact: true }).waitFor();
    await owner.locator('input[type="file"][name="upload"]').setInputFiles([
      { name: "red.png", mimeType: "image/png", buffer: await png({ r: 220, g: 40, b: 40 }) },
      { name: "green.png", mimeType: "image/png", buffer: await png({ r: 40, g: 180, b: 60 }, 300, 500) },
      { name: "blue.png", mimeType: "image/png", buffer: await png({ r: 40, g: 80, b: 220 }, 800, 200) },
      { name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("plain text, not an image\n") },
    ]);
    // A fifth file arrives by drag and drop.
    const dropped = (await png({ r: 240, g: 200, b: 20 }, 200, 200)).toString("base64");
    const transfer = await owner.evaluateHandle(
      `(() => { const dt = new DataTransfer(); const bytes = Uint8Array.from(atob(${JSON.stringify(dropped)}), (c) => c.charCodeAt(0));
        dt.items.add(new File([bytes], "dropped.png", { type: "image/png" })); return dt; })()`,
    );
    await owner.dispatchEvent('[data-testid="dropzone"]', "drop", { dataTransfer: transfer });

    for (const name of ["red.png", "green.png", "blue.png", "notes.txt", "dropped.png"]) {
      await owner.locator(`li.upload[data-upload="${name}"]`).getByText("Done").waitFor();
    }
    const loadedThumbs =
      "[...document.querySelectorAll('li.tile img.thumb')].filter((i) => i.complete && i.naturalWidth > 0).length";
    await owner.waitForFunction(`${loadedThumbs} >= 4`, undefined, { timeout: 30000 });
    // 160 logical pixels at dpr 2: the transform was asked for dpr=2 and the file is 320 px wide.
    expect(transformRequests.some((u) => u.includes("/dpr=2"))).toBe(true);
    const widths = JSON.parse(
      await owner.evaluate(
        "JSON.stringify([...document.querySelectorAll('li.tile img.thumb')].map((i) => i.naturalWidth))",
      ),
    );
    expect(widths.every((w: number) => w === 320)).toBe(true);
    await owner.locator('li.tile[data-name="notes.txt"]').getByText("TXT", { exact: true }).waitFor();
    await screenshot(owner, "04-assets-grid");

    // The member's page was open all along: the new files appear there without a reload.
    await member.waitForFunction(`${loadedThumbs} >= 4`, undefined, { timeout: 30000 });
    const memberWidths = JSON.parse(
      await member.evaluate(
        "JSON.stringify([...document.querySelectorAll('li.tile img.thumb')].map((i) => i.naturalWidth))",
      ),
    );
    expect(memberWidths.every((w: number) => w === 160)).toBe(true);
  });

  test("a new folder is named from the keyboard as its dialog opens, and the owner's folder, rename and move show up on the member's open page without a reload", async () => {
    await owner.getByRole("button", { name: "New folder" }).click();
    // The dialog opens with its name field focused (not its Close button): type, then Enter.
    await owner.locator("dialog[open]").waitFor();
    expect(await owner.evaluate("document.activeElement?.getAttribute('name')")).toBe("folder-name");
    await owner.keyboard.type("Shoes");
    await owner.keyboard.press("Enter");
    await member.locator('li.tile[data-name="Shoes"]').waitFor();
    await member.getByRole("navigation", { name: "Folders" }).getByRole("link", { name: "Shoes" }).waitFor();

    await owner.getByRole("button", { name: "Open red.png" }).click();
    await owner.getByLabel("Name", { exact: true }).fill("crimson.png");
    await owner.getByRole("button", { name: "Rename" }).click();
    await member.locator('li.tile[data-name="crimson.png"]').waitFor();
    await owner.getByRole("button", { name: "Move…" }).click();
    await owner.getByLabel("Into folder").selectOption({ label: "Shoes" });
    await owner.getByRole("button", { name: "Move", exact: true }).click();
    await owner
      .getByRole("dialog")
      .waitFor({ state: "detached" })
      .catch(() => {});
    await member.locator('li.tile[data-name="crimson.png"]').waitFor({ state: "detached" });
    await member.getByRole("button", { name: "Open folder Shoes" }).click();
    await member.locator('li.tile[data-name="crimson.png"]').waitFor();
    await member.getByRole("navigation", { name: "Folder path" }).getByText("Shoes").waitFor();
    await screenshot(member, "05-member-folder");
  });

  test("publishing an original gives a public URL that serves the file without a token", async () => {
    await owner.getByRole("link", { name: "All assets" }).first().click();
    await owner.getByRole("button", { name: "Open green.png" }).click();
    await owner.getByRole("button", { name: "Publish" }).click();
    const urlField = owner.getByTestId("public-url");
    await owner.waitForFunction(
      `(document.querySelector('[data-testid="public-url"]')?.value ?? "").includes("/media/")`,
    );
    const url = await urlField.inputValue();
    const res = await fetch(server.url + new URL(url).pathname);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("image/png");
    await owner.locator('li.tile[data-name="green.png"]').getByText("Public").waitFor();
    await screenshot(owner, "06-asset-details");
    await owner.getByRole("button", { name: "Unpublish" }).click();
    // Exactly "Publish": the name alone also matches "Unpublish", still there until the answer comes.
    await owner.getByRole("button", { name: "Publish", exact: true }).waitFor();
    expect((await fetch(server.url + new URL(url).pathname)).status).toBe(404);
    await owner.keyboard.press("Escape");
    await owner.getByRole("dialog").waitFor({ state: "detached" });
  });

  test("a new version of a file is uploaded from its details and listed beside the earlier one, and its metadata is edited there", async () => {
    await owner.getByRole("button", { name: "Open dropped.png" }).click();
    await owner.getByRole("dialog").getByText("Version 1").waitFor();
    await owner.locator('input[name="new-version"]').setInputFiles({
      name: "dropped-v2.png",
      mimeType: "image/png",
      buffer: await png({ r: 20, g: 20, b: 20 }, 120, 60),
    });
    await owner.getByRole("dialog").getByText("Version 2 (current)").waitFor();
    await owner.getByRole("dialog").getByText("Version 1", { exact: true }).waitFor();
    await owner
      .locator('li.tile[data-name="dropped.png"]')
      .getByText(/^120×60/)
      .waitFor();

    // Metadata: set a field, see it, remove it.
    const dialog = owner.getByRole("dialog");
    // Field names are dotted (group.name); a plain one is refused with the server's message, which
    // names the member and what it expected (not the bare "Invalid parameter").
    await dialog.getByLabel("Field").fill("sku");
    await dialog.getByLabel("Value").fill("RS-42");
    await dialog.getByRole("button", { name: "Set" }).click();
    await dialog.getByRole("alert").getByText("Invalid name: expected a name like group.field").waitFor();
    await dialog.getByLabel("Field").fill("shop.sku");
    await dialog.getByRole("button", { name: "Set" }).click();
    await dialog.locator(".facts dt", { hasText: "shop.sku" }).waitFor();
    await dialog.getByText("RS-42").waitFor();
    await dialog.getByRole("button", { name: "Remove shop.sku" }).click();
    await dialog.getByText("No metadata yet.").waitFor();
    await owner.keyboard.press("Escape");
    await owner.getByRole("dialog").waitFor({ state: "detached" });
  });

  test("searching finds assets by name, and deleted ones go to the trash and come back", async () => {
    await owner.getByLabel("Search assets").fill("blue");
    await owner.getByRole("button", { name: "Search", exact: true }).click();
    await owner.getByRole("heading", { name: "Search: blue" }).waitFor();
    await owner.locator('li.tile[data-name="blue.png"]').waitFor();
    // The heading changes at once and the grid when the search answers (until then it still shows
    // the folder, blue.png among it): wait for the answer's count, then count the tiles.
    await owner.getByRole("status").getByText("1 item", { exact: true }).waitFor();
    expect(await owner.locator("li.tile").count()).toBe(1);

    // Images only, anywhere in the project: the text file and the folders are left out.
    await owner.getByLabel("Search assets").fill("");
    await owner.getByLabel("Type").selectOption("image");
    await owner.getByRole("button", { name: "Search", exact: true }).click();
    await owner.getByRole("heading", { name: "Search: Images" }).waitFor();
    await owner.getByRole("status").getByText("4 items").waitFor();
    expect(await owner.locator('li.tile[data-name="notes.txt"]').count()).toBe(0);
    expect(await owner.locator('li.tile[data-name="Shoes"]').count()).toBe(0);
    await owner.getByLabel("Type").selectOption("");
    await owner.getByLabel("Search assets").fill("blue");
    await owner.getByRole("button", { name: "Search", exact: true }).click();
    await owner.getByRole("heading", { name: "Search: blue" }).waitFor();

    await owner.getByRole("checkbox", { name: "Select blue.png" }).check();
    await owner.getByRole("toolbar").getByRole("button", { name: "Delete" }).click();
    await owner.getByText("Moved to the trash").waitFor();
    await owner.getByRole("link", { name: "Trash" }).click();
    await owner.locator('li.tile[data-name="blue.png"]').waitFor();
    await owner.getByRole("checkbox", { name: "Select blue.png" }).check();
    await owner.getByRole("toolbar").getByRole("button", { name: "Restore" }).click();
    await owner.getByText("The trash is empty.").waitFor();
    await owner.getByRole("link", { name: "All assets" }).first().click();
    await owner.locator('li.tile[data-name="blue.png"]').waitFor();
  });

  test("a renamed project shows its new name on the member's page as it happens", async () => {
    await owner.getByRole("link", { name: "Settings" }).click();
    await owner.getByLabel("Project name").fill("Catalogue 2027");
    await owner.getByRole("button", { name: "Rename" }).click();
    await member.getByTestId("project-name").getByText("Catalogue 2027").waitFor();
  });

  test("a page that lost its connection catches up from its cursors when it is back", async () => {
    await member.getByRole("link", { name: "All assets" }).first().click();
    await member.locator(".live-badge.live").waitFor();
    await memberCtx.setOffline(true);
    await member.locator(".live-badge.connecting").waitFor({ timeout: 45000 });
    // Changed while the member is away.
    const folder = await server.call(`/api/p/${projectGid}/assets/create`, {
      token: await ownerToken(),
      body: { name: "Made while away" },
    });
    expect(folder.status).toBe(200);
    await memberCtx.setOffline(false);
    await member.locator(".live-badge.live").waitFor({ timeout: 45000 });
    await member.locator('li.tile[data-name="Made while away"]').waitFor();
  });

  test("a new API key is shown once, focused and selected whole for copying, works for the project's auth call until deactivated, opens for editing in its name, and is deleted", async () => {
    await owner.getByRole("link", { name: "API keys" }).click();
    await owner.getByLabel("Name").fill("Shop feed");
    await owner.getByLabel("Requests per second").fill("20");
    await owner.getByRole("button", { name: "Create key" }).click();
    const key = await owner.getByTestId("new-api-key").inputValue();
    expect(key).toMatch(/^apis_/);
    // The dialog opens with the key focused and selected whole, ready to be copied.
    await owner.waitForFunction(
      `document.activeElement?.dataset.testid === "new-api-key" && document.activeElement.selectionStart === 0 && document.activeElement.selectionEnd === ${key.length}`,
    );
    await owner.getByRole("button", { name: "Done" }).click();
    await owner.locator("tr", { hasText: "Shop feed" }).getByText("20 per second").waitFor();
    // Editing a key starts in its name.
    await owner.locator("tr", { hasText: "Shop feed" }).getByRole("button", { name: "Edit" }).click();
    await owner.waitForFunction(`document.activeElement?.value === "Shop feed"`);
    await owner.keyboard.press("Escape");
    await owner.locator("dialog[open]").waitFor({ state: "detached" });
    expect(await owner.content()).not.toContain(key);
    const auth = await server.call(`/api/p/${projectGid}/auth`, { body: { api_key: key } });
    expect(auth.status).toBe(200);

    await owner.locator("tr", { hasText: "Shop feed" }).getByRole("button", { name: "Deactivate" }).click();
    // The row turns once the server has answered: its Reactivate button comes with the new status.
    await owner
      .locator("tr", { hasText: "Shop feed" })
      .getByRole("button", { name: "Reactivate", exact: true })
      .waitFor();
    await owner.locator("tr", { hasText: "Shop feed" }).getByText("Deactivated", { exact: true }).waitFor();
    const again = await server.call(`/api/p/${projectGid}/auth`, { body: { api_key: key } });
    expect(again.status).toBe(403);
    await screenshot(owner, "07-api-keys");
    await owner.locator("tr", { hasText: "Shop feed" }).getByRole("button", { name: "Delete" }).click();
    await owner.getByRole("dialog").getByRole("button", { name: "Delete key" }).click();
    await owner.getByText("No API keys yet.").waitFor();
  });

  test("a backup shows its job's progress, becomes ready, a restore runs to its end, and the backup is deleted", async () => {
    await owner.getByRole("link", { name: "Backups" }).click();
    await owner.getByLabel("Name").fill("Before the import");
    await owner.getByRole("button", { name: "Back up now" }).click();
    const row = owner.locator(".row-item", { hasText: "Before the import" });
    await row.getByText("Ready").waitFor({ timeout: 30000 });
    await row.getByRole("button", { name: "Restore" }).click();
    await owner.getByRole("dialog").getByRole("button", { name: "Restore" }).click();
    await owner.getByText("Restore: done").waitFor({ timeout: 30000 });
    await screenshot(owner, "08-backups");
    await row.getByRole("button", { name: "Delete" }).click();
    await owner.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await owner.getByText("No backups yet.").waitFor();
  });

  test("the asset grid works from the keyboard: Tab reaches a folder, Enter opens it, Delete moves an item to the trash", async () => {
    await owner.getByRole("link", { name: "Assets" }).click();
    await owner.locator('li.tile[data-name="Shoes"]').waitFor();
    await owner.getByLabel("Search assets").focus();
    await tabTo(owner, "Open folder Shoes");
    await owner.keyboard.press("Enter");
    await owner.getByRole("heading", { name: "Shoes", exact: true }).waitFor();
    await owner.locator('li.tile[data-name="crimson.png"]').waitFor();
    await tabTo(owner, "Open crimson.png");
    await owner.keyboard.press("Delete");
    await owner.getByText("Moved to the trash").waitFor();
    await owner.locator('li.tile[data-name="crimson.png"]').waitFor({ state: "detached" });
  });

  test("an upload in progress can be cancelled and leaves no asset behind", async () => {
    await owner.getByRole("link", { name: "All assets" }).first().click();
    await owner.getByRole("heading", { name: "Assets", exact: true }).waitFor();
    // A slow uplink (Chromium's network emulation), so the upload is still running when cancelled.
    const cdp = await ownerCtx.newCDPSession(owner);
    await cdp.send("Network.enable");
    await cdp.send("Network.emulateNetworkConditions", {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: 64 * 1024,
    });
    try {
      await owner.locator('input[type="file"][name="upload"]').setInputFiles({
        name: "big.bin",
        mimeType: "application/octet-stream",
        // Large enough that the cancel comes long before the last byte even where Chromium's
        // throttle of uploads does not hold (seen on loaded runs: a 4 MiB body went whole in
        // half a second, and was stored before the cancel arrived).
        buffer: Buffer.alloc(48 * 1024 * 1024, 7),
      });
      const row = owner.locator('li.upload[data-upload="big.bin"]');
      await row.getByText(/^\d+%$/).waitFor();
      await row.getByRole("button", { name: "Cancel the upload of big.bin" }).click();
      await row.getByText("Cancelled").waitFor();
    } finally {
      await cdp.send("Network.emulateNetworkConditions", {
        offline: false,
        latency: 0,
        downloadThroughput: -1,
        uploadThroughput: -1,
      });
      await cdp.detach();
    }
    const found = await server.call(`/api/p/${projectGid}/assets/search`, {
      token: await ownerToken(),
      body: { q: "big" },
    });
    // Said with the names, sizes and times of what was found, should anything be (a rare failure on a loaded run).
    const seen = Object.values((found.body.data?.assets ?? {}) as Record<string, Record<string, unknown>>).map(
      (a) => `${a.name} ${a.size} bytes, created ${a.created_on}`,
    );
    expect({ gids: found.body.result.assets, seen }).toEqual({ gids: [], seen: [] });
  });

  test("dragging a tile onto a folder moves it there, and onto All assets brings it back", async () => {
    await owner.getByRole("link", { name: "All assets" }).first().click();
    await owner.getByRole("heading", { name: "Assets", exact: true }).waitFor();
    await owner.locator('li.tile[data-name="notes.txt"]').dragTo(owner.locator('li.tile[data-name="Made while away"]'));
    await owner.getByText("Moved to Made while away").waitFor();
    await owner.locator('li.tile[data-name="notes.txt"]').waitFor({ state: "detached" });
    await owner.getByRole("button", { name: "Open folder Made while away" }).click();
    await owner.locator('li.tile[data-name="notes.txt"]').waitFor();
    await owner
      .locator('li.tile[data-name="notes.txt"]')
      .dragTo(owner.getByRole("navigation", { name: "Folders" }).getByRole("link", { name: "All assets" }));
    await owner.getByText("Moved to the top level").waitFor();
    await owner.locator('li.tile[data-name="notes.txt"]').waitFor({ state: "detached" });
  });

  test("wrong sign-in details are shown as a message, not a blank page", async () => {
    const page = await browser.newPage();
    await page.goto(server.url + "/console/projects");
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await page.getByLabel("Username").fill("olivia");
    await page.getByLabel("Password").fill("not-the-password-1");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").getByText("Wrong username or password").waitFor();
    await page.close();
  });

  test("an error page of a proxy in front of the server (HTTP 502, not JSON) is shown as a sentence, not a bare status", async () => {
    const page = await browser.newPage();
    await page.route("**/api/login", (route) =>
      route.fulfill({ status: 502, contentType: "text/html", body: "<html><body>Bad Gateway</body></html>" }),
    );
    await page.goto(server.url + "/");
    await page.getByLabel("Username").fill("olivia");
    await page.getByLabel("Password").fill("olivias-secret-1");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page
      .getByRole("alert")
      .getByText("The server is not answering properly (HTTP 502): try again in a moment")
      .waitFor();
    await page.close();
  });

  test("the sign-in form works from the keyboard alone and returns to the page asked for", async () => {
    const page = await browser.newPage();
    await page.goto(server.url + `/console/p/${projectGid}/members`);
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    await page.keyboard.type("bob"); // the username field has the focus
    await page.keyboard.press("Tab");
    await page.keyboard.type("bobs-secret-2");
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Members", exact: true }).waitFor();
    await page.close();
  });

  test("the main pages (the API keys' table too) fit a 360 px wide phone and a 1920 px wide screen, with the asset search's placeholder whole and no empty band under the project's title bar on the phone", async () => {
    const pages = [
      "/console/projects",
      `/console/p/${projectGid}/assets`,
      `/console/p/${projectGid}/members`,
      `/console/p/${projectGid}/backups`,
      `/console/p/${projectGid}/apikeys`,
      "/console/account",
    ];
    // A key, so the API keys page shows its table.
    const made = await server.call(`/api/p/${projectGid}/apikeys/create`, {
      token: await ownerToken(),
      body: { name: "Phone check" },
    });
    expect(made.status).toBe(200);
    for (const [width, height] of [
      [360, 740],
      [1920, 1080],
    ] as const) {
      await owner.setViewportSize({ width, height });
      for (const path of pages) {
        await owner.goto(server.url + path);
        await owner
          .locator("main h1")
          .first()
          .waitFor()
          .catch(async (e) => {
            // Keep what the page showed, for the report.
            await screenshot(owner, `failed-${width}-${path.replace(/\//g, "_")}`);
            throw e;
          });
        await owner.waitForLoadState("networkidle");
        const overflow = Number(await owner.evaluate("document.documentElement.scrollWidth - window.innerWidth"));
        expect({ path, width, overflow }).toEqual({ path, width, overflow: 0 });
        // The asset search's words field is wide enough for its placeholder.
        if (path.endsWith("/assets")) {
          const room = Number(
            await owner.evaluate(`(() => {
              const input = document.querySelector('form.search input[type=search], form.search input');
              const style = getComputedStyle(input);
              const ctx = document.createElement('canvas').getContext('2d');
              ctx.font = style.font;
              const inner = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
              return inner - ctx.measureText(input.placeholder).width;
            })()`),
          );
          expect({ path, width, placeholderFits: room >= 0 }).toEqual({ path, width, placeholderFits: true });
        }
        // A short page leaves no empty band under the project's title bar (its folded menu).
        if (width === 360 && path.includes("/p/")) {
          const band = Number(
            await owner.evaluate(
              "document.querySelector('.project-nav').getBoundingClientRect().bottom - document.querySelector('.project-title').getBoundingClientRect().bottom",
            ),
          );
          expect({ path, width, band: band < 20 }).toEqual({ path, width, band: true });
        }
        await screenshot(owner, `09-${width}-${path.split("/").filter(Boolean).pop()}`);
      }
    }
    await owner.setViewportSize({ width: 1280, height: 800 });
  });

  test("neither browser logged a script error", () => {
    expect(ownerErrors).toEqual([]);
    expect(memberErrors).toEqual([]);
  });

  /** Presses Tab until the focused element has this accessible label (a bounded number of times). */
  async function tabTo(page: Page, label: string) {
    for (let i = 0; i < 80; i++) {
      await page.keyboard.press("Tab");
      if ((await page.evaluate("document.activeElement?.getAttribute('aria-label')")) === label) return;
    }
    throw new Error(`Tab never reached "${label}"`);
  }

  /** The owner's JWT as the console keeps it. */
  async function ownerToken(): Promise<string> {
    return String(await owner.evaluate("localStorage.getItem('apis.jwt')"));
  }
});
