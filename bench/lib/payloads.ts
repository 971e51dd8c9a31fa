// Realistic request bodies, shaped like what the ARA callback sends.

/** A looped package task's result for one host (~1.6 KB). */
export function loopedResultContent(): Record<string, unknown> {
  return {
    changed: false, msg: 'All items completed',
    results: Array.from({ length: 6 }, (_, i) => ({
      ansible_loop_var: 'item', changed: false, failed: false, item: `python3-package-${i}`,
      msg: `python3-package-${i} is already the newest version (3.11.2-1+b1).`,
      invocation: { module_args: { name: `python3-package-${i}`, state: 'present', update_cache: false, cache_valid_time: 0, install_recommends: null } },
    })),
  };
}

/** A fact-gathering result (~30 KB of ansible_facts). */
export function factsResultContent(): Record<string, unknown> {
  const facts: Record<string, unknown> = {
    ansible_hostname: 'web-01', ansible_fqdn: 'web-01.example.org', ansible_distribution: 'Debian', ansible_distribution_version: '12.8',
    ansible_kernel: '6.1.0-27-amd64', ansible_memtotal_mb: 24034, ansible_processor_vcpus: 2, ansible_env: { HOME: '/root', PATH: '/usr/bin:/bin' },
  };
  for (let i = 0; i < 60; i++) {
    facts[`ansible_eth${i}`] = { device: `eth${i}`, active: true, mtu: 1500, macaddress: `52:54:00:12:34:${(i % 100).toString().padStart(2, '0')}`,
      ipv4: { address: `10.0.${i}.10`, broadcast: `10.0.${i}.255`, netmask: '255.255.255.0', network: `10.0.${i}.0`, prefix: '24' },
      ipv6: [{ address: `fe80::5054:ff:fe12:34${i}`, prefix: '64', scope: 'link' }], features: { rx_checksumming: 'on', tx_checksumming: 'on', scatter_gather: 'on' } };
  }
  return { ansible_facts: facts, changed: false, deprecations: [], warnings: [] };
}

export interface Tree { playbook: number; play: number; task: number; host: number; file: number }

async function post(base: string, path: string, body: unknown): Promise<any> {
  const r = await fetch(`${base}/api/v1/${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (r.status !== 201) throw new Error(`POST ${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

/** A playbook with one file, play, task and host, as the callback creates them. */
export async function createTree(base: string, n = 0): Promise<Tree> {
  const playbook = (await post(base, 'playbooks', { ansible_version: '2.14.18', path: `/srv/site-${n}.yml`, status: 'running', arguments: { check: false } })).id;
  const file = (await post(base, 'files', { playbook, path: `/srv/site-${n}.yml`, content: '- hosts: all\n  tasks: []\n' })).id;
  const play = (await post(base, 'plays', { playbook, name: 'site', uuid: '5254000b-5d3f-1b2c-0000-000000000008', status: 'running' })).id;
  const task = (await post(base, 'tasks', { playbook, play, file, name: 'packages', action: 'ansible.builtin.apt', lineno: 4, handler: false, status: 'running', tags: [] })).id;
  const host = (await post(base, 'hosts', { playbook, name: `web-${n}.example.org` })).id;
  return { playbook, play, task, host, file };
}

export function resultBody(tree: Tree, content: Record<string, unknown>): string {
  const now = new Date().toISOString();
  return JSON.stringify({
    playbook: tree.playbook, play: tree.play, task: tree.task, host: tree.host, delegated_to: [],
    status: 'ok', changed: false, ignore_errors: false, started: now, ended: now, content,
  });
}
