// The console's session: renewed JWTs are taken from answers and from the socket; a session the
// server ends sends the page back to the sign-in form with a message.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { TestServer, until } from "../helpers/server";
import { CHROMIUM, launch, watchErrors } from "./browser";

setDefaultTimeout(120_000);

function claims(jwt: string): { exp: number; iat: number } {
  return JSON.parse(Buffer.from(jwt.split(".")[1]!, "base64url").toString());
}

describe.skipIf(!CHROMIUM)("web console: the session", () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    // Tokens live 6 seconds: renewals come within a few seconds.
    server = await TestServer.start({ "jwt-lifetime": "6" });
    browser = await launch();
    page = await browser.newPage();
    errors = watchErrors(page);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
  });

  const stored = async () => String(await page.evaluate("localStorage.getItem('apis.jwt')"));

  test("the page keeps working past its first token's lifetime by keeping the renewed tokens", async () => {
    const u = await server.user("ivy", "ivys-secret-1");
    await server.project(u.token, "Long day");
    await page.goto(server.url + "/");
    await page.getByLabel("Username").fill("ivy");
    await page.getByLabel("Password").fill("ivys-secret-1");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("link", { name: "Long day" }).click();
    await page.getByRole("heading", { name: "Assets", exact: true }).waitFor();
    const first = await stored();
    const firstExpiry = claims(first).exp;

    // With the page left open, the socket pushes a replacement before the first token expires.
    const renewed = await until(
      async () => {
        const now = await stored();
        return now !== first ? now : undefined;
      },
      20_000,
      "a renewed JWT in localStorage",
    );
    expect(claims(renewed).exp).toBeGreaterThan(firstExpiry);

    // Past the first token's expiry, the page still works and stays signed in.
    await until(() => Date.now() / 1000 > firstExpiry + 1 || undefined, undefined, "the first token's expiry");
    await page.getByRole("link", { name: "Members" }).click();
    await page.locator(".row-item", { hasText: "ivy" }).waitFor();
    await page.getByRole("link", { name: "Assets" }).click();
    await page.getByRole("heading", { name: "Assets", exact: true }).waitFor();
    expect(await page.getByRole("heading", { name: "Sign in" }).count()).toBe(0);
  });

  test("when the account is deleted from another session the page returns to sign in and says why", async () => {
    const login = await server.call("/api/login", { body: { username: "ivy", password: "ivys-secret-1" } });
    const token = login.headers.get("authorization")!.replace(/^Bearer\s+/i, "");
    // The account still owns a project: delete that first, then the account.
    const projects = Object.keys((await server.call("/api/init", { token })).body.data["cc.projects"]);
    for (const p of projects)
      expect((await server.call("/api/projects/delete", { token, body: { project: p } })).status).toBe(200);
    expect((await server.call("/api/account/delete", { token, body: { confirm: true } })).status).toBe(200);

    await page.getByText("Your session has ended. Please sign in again.").waitFor();
    await page.getByRole("heading", { name: "Sign in" }).waitFor();
    expect(await page.evaluate("localStorage.getItem('apis.jwt')")).toBeNull();
  });

  test("the page logged no script error", () => {
    expect(errors.filter((e) => !e.includes("401"))).toEqual([]);
  });
});
