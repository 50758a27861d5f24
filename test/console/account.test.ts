// The console's account and project management pages end to end, in headless Chromium.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import sharp from "sharp";
import { TestServer } from "../helpers/server";
import { codeOf, TestSmtp } from "../helpers/smtp";
import { CHROMIUM, launch, screenshot, watchErrors } from "./browser";

setDefaultTimeout(120_000);

describe.skipIf(!CHROMIUM)("web console: account and project management", () => {
  let server: TestServer;
  let smtp: TestSmtp;
  let browser: Browser;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    smtp = await TestSmtp.start();
    server = await TestServer.start({ "smtp-url": smtp.url });
    browser = await launch();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    errors = watchErrors(page);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await smtp?.stop();
  });

  async function signIn(p: Page, username: string, password: string) {
    await p.goto(server.url + "/");
    await p.getByLabel("Username").fill(username);
    await p.getByLabel("Password").fill(password);
    await p.getByRole("button", { name: "Sign in" }).click();
    await p.getByRole("heading", { name: "Projects", exact: true }).waitFor();
  }

  test("a forgotten password is reset with the mailed code, which also signs the person in", async () => {
    await server.user("ann", "old-password-1", "ann@example.test");
    await page.goto(server.url + "/");
    await page.getByRole("link", { name: "Forgot your password?" }).click();
    await page.getByLabel("Username or email").fill("ann@example.test");
    const since = smtp.messages.length;
    await page.getByRole("button", { name: "Send me a code" }).click();
    const code = codeOf(await smtp.next("ann@example.test", since));
    await page.getByLabel("Code from the mail").fill(code);
    await page.getByLabel("Username").fill("ann");
    await page.getByLabel("New password").fill("new-password-2");
    await page.getByRole("button", { name: "Set password and sign in" }).click();
    await page.getByRole("heading", { name: "Projects", exact: true }).waitFor();
    expect((await server.call("/api/login", { body: { username: "ann", password: "new-password-2" } })).status).toBe(
      200,
    );
  });

  test("the profile's name, language and time zone are saved (Save only once something changed), and the top bar shows the new name", async () => {
    await page.getByRole("link", { name: /Account of/ }).click();
    await page.getByRole("heading", { name: "Your account", exact: true }).waitFor();
    const save = page.getByRole("button", { name: "Save profile" });
    expect(await save.isDisabled()).toBe(true);
    await page.getByLabel("Name", { exact: true }).fill("Ann Example");
    expect(await save.isDisabled()).toBe(false);
    await page.getByLabel("Language").selectOption("de-ch");
    await page.getByLabel("Time zone").selectOption("Europe/Zurich");
    await page.getByRole("button", { name: "Save profile" }).click();
    await page.locator(".topbar .me-name").getByText("Ann Example").waitFor();
    const me = (await server.call("/api/init", { token: await token(page) })).body;
    const user = me.data["cc.users"][me.result.user];
    expect(user.name).toBe("Ann Example");
    expect(user.options).toEqual({ language: "de-ch", timezone: "Europe/Zurich" });
    // Saved: nothing left to save.
    await page.waitForFunction(
      `[...document.querySelectorAll("button")].find((b) => b.textContent.trim() === "Save profile")?.disabled === true`,
    );
  });

  test("a time zone the server refuses is said under the Time zone field", async () => {
    // The server's own answer to a time zone it does not know (docs/account.md), for one request.
    const issue = {
      field: "timezone",
      rule: "timezone",
      message: "Not an IANA time zone name such as Europe/Berlin",
    };
    await page.route(
      "**/api/account/update",
      (route) =>
        route.fulfill({
          status: 422,
          contentType: "application/json",
          body: JSON.stringify({
            success: false,
            result: { code: 1001, message: "Validation error", info: { validation: [issue] }, validation: [issue] },
            data: {},
          }),
        }),
      { times: 1 },
    );
    await page.getByLabel("Time zone").selectOption("Europe/Berlin");
    await page.getByRole("button", { name: "Save profile" }).click();
    await page
      .locator("label.field", { hasText: "Time zone" })
      .locator(".field-error")
      .getByText("Not an IANA time zone name")
      .waitFor();
    await page.getByLabel("Time zone").selectOption("Europe/Zurich");
  });

  test("a picture becomes the avatar and can be removed again", async () => {
    const picture = await sharp({
      create: { width: 300, height: 300, channels: 3, background: { r: 90, g: 20, b: 160 } },
    })
      .png()
      .toBuffer();
    await page
      .locator('input[name="avatar"]')
      .setInputFiles({ name: "me.png", mimeType: "image/png", buffer: picture });
    await page.getByText("Picture changed").waitFor();
    await page.locator('.topbar img.avatar[src^="/media/avatars/"]').waitFor();
    await page.getByRole("button", { name: "Remove picture" }).click();
    await page.getByText("Picture removed").waitFor();
    await page.locator(".topbar img.avatar").waitFor({ state: "detached" });
  });

  test("the email address changes once the code sent to the new address is entered", async () => {
    await page.getByLabel("New address").fill("ann@new.example");
    const since = smtp.messages.length;
    await page.getByRole("button", { name: "Send a code" }).click();
    const code = codeOf(await smtp.next("ann@new.example", since));
    await page.getByLabel("Code sent to ann@new.example").fill("WRONG1");
    await page.getByRole("button", { name: "Confirm" }).click();
    await page.getByRole("alert").first().waitFor(); // a wrong code is explained, not swallowed
    await page.getByLabel("Code sent to ann@new.example").fill(code);
    await page.getByRole("button", { name: "Confirm" }).click();
    await page.getByText("Email address changed").waitFor();
    await page.getByText("Current address: ann@new.example").waitFor();
    await screenshot(page, "10-account");
  });

  test("an invitation to an existing account appears on its open project list, is accepted there, and a deleted project sends its member back to the list", async () => {
    const owner = await server.user("olaf");
    const project = await server.project(owner.token, "Olaf's catalogue");
    await page.getByRole("link", { name: "Projects", exact: true }).click();
    await page.getByRole("heading", { name: "Projects", exact: true }).waitFor();
    const invited = await server.call(`/api/p/${project}/members/invite`, {
      token: owner.token,
      body: { email: "ann@new.example" },
    });
    expect(invited.status).toBe(200);
    const card = page.locator(".card.invitation", { hasText: "Olaf's catalogue" });
    await card.waitFor(); // no reload: the sync item brought it
    await screenshot(page, "12-invitation");
    await card.getByRole("button", { name: "Accept" }).click();
    await page.getByRole("link", { name: "Olaf's catalogue" }).click();
    await page.getByRole("heading", { name: "Assets", exact: true }).waitFor();

    // The owner deletes the project while the member looks at it: the page says so and leaves.
    expect((await server.call("/api/projects/delete", { token: owner.token, body: { project } })).status).toBe(200);
    await page.getByText("You no longer have access to this project").waitFor();
    await page.getByRole("heading", { name: "Projects", exact: true }).waitFor();
    await page.getByRole("link", { name: "Olaf's catalogue" }).waitFor({ state: "detached" });
    await page.getByRole("link", { name: /Account of/ }).click();
    await page.getByRole("heading", { name: "Your account", exact: true }).waitFor();
  });

  test("a member leaves a project from the account page and it leaves the project list", async () => {
    const olga = await server.user("olga");
    const project = await server.project(olga.token, "Olga's shop");
    const ann = (await server.call("/api/init", { token: await token(page) })).body.result.user;
    await server.addMember(project, ann);
    await page.locator(".row-item", { hasText: "Olga's shop" }).waitFor(); // arrives live
    await page.locator(".row-item", { hasText: "Olga's shop" }).getByRole("button", { name: "Leave" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Leave" }).click();
    await page.getByText("You left Olga's shop").waitFor();
    await page.locator(".row-item", { hasText: "Olga's shop" }).waitFor({ state: "detached" });
  });

  test("a project deleted while its page is still loading sends its member back to the list, not to an error page", async () => {
    const otto = await server.user("otto");
    const project = await server.project(otto.token, "Otto's archive");
    const ann = (await server.call("/api/init", { token: await token(page) })).body.result.user;
    await server.addMember(project, ann);
    await page.getByRole("link", { name: "Projects", exact: true }).click();
    // The project's init is held back until the project is gone (as a loaded machine may do).
    let deleted!: () => void;
    const gone = new Promise<void>((resolve) => (deleted = resolve));
    const init = new RegExp(`/api/p/${project}/init$`);
    await page.route(init, async (route) => {
      await gone;
      await route.continue();
    });
    await page.getByRole("link", { name: "Otto's archive" }).click();
    await page.getByRole("heading", { name: "Assets", exact: true }).waitFor();
    expect((await server.call("/api/projects/delete", { token: otto.token, body: { project } })).status).toBe(200);
    deleted();
    await page.getByText("You no longer have access to this project").waitFor();
    await page.getByRole("heading", { name: "Projects", exact: true }).waitFor();
    await page.getByRole("link", { name: "Otto's archive" }).waitFor({ state: "detached" });
    await page.unroute(init);
  });

  test("the owner renames a project, gives it an icon, deletes it, restores it and finally deletes it for good", async () => {
    await page.getByRole("link", { name: "Projects", exact: true }).click();
    await page.getByLabel("Name").fill("Spring range");
    await page.getByRole("button", { name: "Create project" }).click();
    await page.getByRole("heading", { name: "Assets", exact: true }).waitFor();
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByLabel("Project name").fill("Summer range");
    await page.getByRole("button", { name: "Rename" }).click();
    await page.getByTestId("project-name").getByText("Summer range").waitFor();
    const icon = await sharp({ create: { width: 64, height: 64, channels: 3, background: { r: 250, g: 120, b: 0 } } })
      .png()
      .toBuffer();
    await page
      .locator('input[type="file"][accept="image/*"]')
      .setInputFiles({ name: "icon.png", mimeType: "image/png", buffer: icon });
    await page.locator('.project-nav img.project-icon[src^="/media/icons/"]').waitFor();
    await screenshot(page, "11-project-settings");

    await page.getByRole("button", { name: "Delete project" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete project" }).click();
    await page.getByRole("heading", { name: "Deleted projects" }).waitFor();
    const card = page.locator(".card.deleted", { hasText: "Summer range" });
    await card.getByRole("button", { name: "Restore" }).click();
    await page.getByRole("link", { name: "Summer range" }).waitFor();
    await page.getByRole("link", { name: "Summer range" }).click();
    await page.getByRole("link", { name: "Settings" }).click();
    await page.getByRole("button", { name: "Delete project" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete project" }).click();
    await card.getByRole("button", { name: "Delete for good" }).click();
    const dialog = page.getByRole("dialog");
    expect(await dialog.getByRole("button", { name: "Delete for good" }).isDisabled()).toBe(true);
    await dialog.getByLabel("Type Summer range to confirm").fill("Summer range");
    await dialog.getByRole("button", { name: "Delete for good" }).click();
    await page.getByText("Summer range deleted for good").waitFor();
    await page.getByRole("heading", { name: "Deleted projects" }).waitFor({ state: "detached" });
  });

  test("the owner deactivates, reactivates and removes a member, and resends and withdraws an invitation", async () => {
    await page.getByLabel("Name").fill("Team project");
    await page.getByRole("button", { name: "Create project" }).click();
    await page.getByRole("heading", { name: "Assets", exact: true }).waitFor();
    const gid = /\/console\/p\/([0-9a-z]+)\//.exec(page.url())![1]!;
    const carl = await server.user("carl");
    await server.addMember(gid, carl.gid);
    await page.getByRole("link", { name: "Members" }).click();
    const row = page.locator(".row-item", { hasText: "carl" });
    await row.getByRole("button", { name: "Deactivate" }).click();
    await row.getByText("Deactivated").waitFor();
    await row.getByRole("button", { name: "Reactivate" }).click();
    await row.getByText("Active").waitFor();

    await page.getByLabel("Email").fill("dora@example.test");
    await page.getByRole("button", { name: "Send invitation" }).click();
    const dora = page.locator(".row-item", { hasText: "dora@example.test" });
    await dora.getByText("Invited").waitFor();
    const since = smtp.messages.length;
    await dora.getByRole("button", { name: "Resend" }).click();
    await smtp.next("dora@example.test", since);
    await dora.getByRole("button", { name: "Withdraw" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Withdraw" }).click();
    await dora.waitFor({ state: "detached" });

    await row.getByRole("button", { name: "Remove" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Remove" }).click();
    await row.waitFor({ state: "detached" });
  });

  test("an account that owns an active project cannot start its deletion, and the page names the project to delete first", async () => {
    await page.getByRole("link", { name: /Account of/ }).click();
    const panel = page.locator("section", { has: page.getByRole("heading", { name: "Delete your account" }) });
    await panel.getByText(/You still own/).waitFor();
    // Summer range was deleted for good above; Team project is still active.
    expect(await panel.getByRole("link").allTextContents()).toEqual(["Team project"]);
    expect(await panel.getByRole("button", { name: "Delete account" }).isDisabled()).toBe(true);
  });

  test("an account without projects is deleted and the browser is back at the sign-in page", async () => {
    await server.user("erin", "erins-secret-1");
    const other = await browser.newPage();
    await signIn(other, "erin", "erins-secret-1");
    await other.getByRole("link", { name: /Account of/ }).click();
    await other.getByRole("button", { name: "Delete account" }).click();
    await other.getByRole("dialog").getByLabel("Type erin to confirm").fill("erin");
    await other.getByRole("dialog").getByRole("button", { name: "Delete my account" }).click();
    await other.getByRole("heading", { name: "Sign in" }).waitFor();
    expect(await other.evaluate("localStorage.getItem('apis.jwt')")).toBeNull();
    expect((await server.call("/api/login", { body: { username: "erin", password: "erins-secret-1" } })).status).toBe(
      403,
    );
    await other.close();
  });

  test("the page logged no script error", () => {
    expect(errors).toEqual([]);
  });
});

async function token(page: Page): Promise<string> {
  return String(await page.evaluate("localStorage.getItem('apis.jwt')"));
}
