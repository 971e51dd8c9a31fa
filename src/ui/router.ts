// Client-side routing over real addresses (/ui/playbooks/12, …): links are
// ordinary <a href> (keyboard, middle-click and "copy link" work); a plain
// click on one is handled here with history.pushState instead of a reload.
import { useEffect, useState } from 'preact/hooks';

export interface Location { path: string; query: URLSearchParams }

const listeners = new Set<() => void>();

function current(): Location {
  return { path: window.location.pathname, query: new URLSearchParams(window.location.search) };
}

export function navigate(href: string, replace = false): void {
  if (replace) history.replaceState(null, '', href);
  else history.pushState(null, '', href);
  for (const l of listeners) l();
  if (!replace) window.scrollTo(0, 0);
}

export function useLocation(): Location {
  const [loc, setLoc] = useState(current);
  useEffect(() => {
    const update = () => setLoc(current());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => { listeners.delete(update); window.removeEventListener('popstate', update); };
  }, []);
  return loc;
}

/** Intercept plain left clicks on same-origin /ui/ links. */
export function installLinkHandler(): void {
  document.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = (e.target as Element | null)?.closest?.('a');
    if (!a || a.target || a.hasAttribute('download')) return;
    const url = new URL(a.href, window.location.href);
    if (url.origin !== window.location.origin || !url.pathname.startsWith('/ui/')) return;
    e.preventDefault();
    navigate(url.pathname + url.search + url.hash);
  });
}
