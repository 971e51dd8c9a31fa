// A real headless Chromium (Debian's /usr/bin/chromium) driven by
// playwright-core, for the web UI's tests and benchmark. No browser is
// downloaded: playwright-core only speaks the DevTools protocol to the
// installed binary. Each launch gets a fresh profile in a temp directory.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';

export const CHROMIUM = process.env.LOGBOOK_CHROMIUM ?? '/usr/bin/chromium';

export function hasChromium(): boolean {
  return existsSync(CHROMIUM);
}

/** The flags the brief asks for: no GPU, no QUIC, nothing reaching out to the network. */
const FLAGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage',
];

export async function launchBrowser(): Promise<Browser> {
  // playwright's launch() starts the browser with a fresh temporary --user-data-dir and removes it on close
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS, timeout: 60_000 });
}

/** (Re)build the UI bundle into dist/ui, as `npm run build` does (esbuild: well under a second). */
export function buildUi(): void {
  const r = spawnSync(process.execPath, [join(process.cwd(), 'scripts', 'build_ui.mjs')], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`UI build failed:\n${r.stdout}\n${r.stderr}`);
}

export interface OpenedPage {
  context: BrowserContext;
  page: Page;
  /** console errors and uncaught exceptions seen so far */
  errors: string[];
  close: () => Promise<void>;
}

/** A new context (own cookies, storage, viewport, colour scheme) with one page that records console errors. */
export async function openPage(browser: Browser, options: BrowserContextOptions = {}): Promise<OpenedPage> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light', ...options });
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  const errors: string[] = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()} @ ${m.location().url}`); });
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  return { context, page, errors, close: () => context.close() };
}

export const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'ui');

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: false });
  return path;
}
