// logbook's web UI (docs/ui.md): a small Preact app over the public API.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { signIn, signOut, storedAuthorization } from './api.js';
import { FilePage } from './pages/file.js';
import { HostPage } from './pages/host.js';
import { PlaybookPage } from './pages/playbook.js';
import { PlaybooksPage } from './pages/playbooks.js';
import { RecordPage } from './pages/record.js';
import { ResultPage } from './pages/result.js';
import { SearchPage } from './pages/search.js';
import { installLinkHandler, navigate, useLocation } from './router.js';
import './style.css';

function Page() {
  const { path, query } = useLocation();
  const m = /^\/ui\/(playbooks|hosts|results|files|records)\/(\d+)\/?$/.exec(path);
  if (path === '/ui/' || path === '/ui') return <PlaybooksPage query={query} />;
  if (path === '/ui/search' || path === '/ui/search/') return <SearchPage query={query} />;
  if (!m) return <p class="notice">No page here. <a href="/ui/">Playbooks</a></p>;
  const id = Number(m[2]);
  switch (m[1]) {
    case 'playbooks': return <PlaybookPage key={id} id={id} query={query} />;
    case 'hosts': return <HostPage key={id} id={id} />;
    case 'results': return <ResultPage key={id} id={id} />;
    case 'records': return <RecordPage key={id} id={id} />;
    default: return <FilePage key={id} id={id} line={Number(query.get('line')) || null} />;
  }
}

function SignIn({ invalid }: { invalid: boolean }) {
  const [token, setToken] = useState('');
  return (
    <form class="signin" onSubmit={(e) => { e.preventDefault(); if (token.trim()) { signIn(token); location.reload(); } }}>
      <h1>Sign in</h1>
      <p>This logbook requires a login to read. Reload to use your browser's user name and password prompt, or paste an API token
        (<code>name.secret</code>, scope read or write). It is kept for this tab only.</p>
      {invalid && <p class="notice error" role="alert">That token was not accepted.</p>}
      <label>Token <input type="password" name="token" autoComplete="off" value={token} onInput={(e) => setToken(e.currentTarget.value)} required /></label>
      <button type="submit">Sign in</button>
    </form>
  );
}

/** The search box of every page; `/` focuses it (unless typing elsewhere). */
function SearchBox() {
  const { path, query } = useLocation();
  const current = path.startsWith('/ui/search') ? query.get('q') ?? '' : '';
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement | null;
      if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey || (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)))) return;
      e.preventDefault();
      (document.getElementById('search-box') as HTMLInputElement | null)?.focus();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);
  return (
    <form class="searchbox" role="search" action="/ui/search" onSubmit={(e) => {
      e.preventDefault();
      const q = String(new FormData(e.currentTarget).get('q') ?? '').trim();
      if (q) navigate(`/ui/search?q=${encodeURIComponent(q)}`);
    }}>
      <input id="search-box" key={current} type="search" name="q" defaultValue={current} placeholder="Search every run  ( / )" aria-label="Search every run" autoComplete="off" />
    </form>
  );
}

function App() {
  const [auth, setAuth] = useState<{ invalid: boolean } | null>(null);
  useEffect(() => {
    const onAuth = (e: Event) => setAuth({ invalid: (e as CustomEvent<boolean>).detail });
    window.addEventListener('logbook:auth', onAuth);
    return () => window.removeEventListener('logbook:auth', onAuth);
  }, []);
  const token = storedAuthorization() !== null;
  return (
    <>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <a class="brand" href="/ui/">logbook</a>
        <nav aria-label="main"><a href="/ui/">Playbooks</a></nav>
        <SearchBox />
        {token && <button type="button" class="link" onClick={() => { signOut(); location.reload(); }}>Sign out</button>}
      </header>
      <main id="main" tabIndex={-1}>{auth ? <SignIn invalid={auth.invalid} /> : <Page />}</main>
    </>
  );
}

installLinkHandler();
render(<App />, document.getElementById('app')!);
