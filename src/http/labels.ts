// The label catalogue: labels are unique by name across all playbooks, so one
// owner (the front) keeps them and persists them (FrontStore). The shards hold
// an id → name replica for rendering playbooks. Every change it makes is handed
// to the live stream's log of label changes (label_changes.ts) in the same turn
// as its write, which also sends it to the replicas once it is durable, and
// what a caller waits for is that: stored, replicated, logged by the shards.
import { formatTimestamp } from '../api/time.js';
import { OP_CREATE, OP_DELETE, OP_UPDATE } from '../shard/changes.js';
import type { LabelStore, StoredLabel } from '../store/label_store.js';
import type { LabelChanges, ReplicaChange } from './label_changes.js';

/** Where the catalogue keeps its labels: front.mdb (FrontStore), or the cluster's label stream (src/cluster/labels.ts). */

export class Label {
  id: number; name: string; created: number; updated: number;
  constructor(id: number, name: string, created: number, updated = created) {
    this.id = id; this.name = name; this.created = created; this.updated = updated;
  }
  toJSON(): string {
    return labelRow(this.id, this);
  }
}

/** A label's row (docs/api.md#representations: list row = detail = write response). */
export function labelRow(id: number, label: StoredLabel): string {
  return '{"id":' + id + ',"created":"' + formatTimestamp(label.created) + '","updated":"'
    + formatTimestamp(label.updated) + '","name":' + JSON.stringify(label.name) + '}';
}

export interface Resolved {
  ids: number[];
  /** labels created for this write */
  created: Label[];
  /** provisional labels this write holds a claim on */
  claims: number[];
  /**
   * resolves when the labels it names are durable, in the shards' replicas and
   * logged for the live stream: those created for it, and those another
   * request's change of is still on its way (null: nothing to wait for)
   */
  persisted: Promise<unknown> | null;
  /**
   * not null: nothing was resolved, because a change on its way moves one of
   * the names between labels (unsettled()); resolve again once this settles
   * (it never rejects)
   */
  retry: Promise<unknown> | null;
}

interface Writing {
  pending: number;
  failed: boolean;
  /** what reads show: the label as its latest write that succeeded left it (null: none) */
  shown: StoredLabel | null;
  /** the names its writes in flight give it (one per write; a delete gives none): any of them may end up stored */
  names: string[];
  /** how many writes were issued / the latest one that succeeded, in the order issued */
  issued: number;
  shownAt: number;
  /** cluster mode: a change of the label read from the label stream meanwhile was not applied (applyStreamed()) */
  streamed: boolean;
}

export class LabelCatalogue {
  readonly byId = new Map<number, Label>();
  readonly byName = new Map<string, Label>();
  /**
   * Labels created by a playbook write that has not succeeded yet, with the number
   * of in-flight writes using them. If every such write fails, the label goes
   * again: a refused request leaves no label behind (docs/api.md#errors).
   */
  private readonly provisional = new Map<number, { refs: number }>();
  /**
   * label id → its writes to the store not settled yet, whether one of them
   * failed, and what reads show of the label meanwhile: its durable state (the
   * catalogue has the change already), as it was before the first of them, then
   * as each one that succeeds left it (null: not shown).
   */
  private readonly writing = new Map<number, Writing>();
  /**
   * label id → its latest change that is not yet durable, replicated and logged
   * (what persist/remove returned): a playbook write that names the label waits
   * for it, so that the playbook is stored and shown with the label as changed.
   */
  private readonly settling = new Map<number, Promise<unknown>>();
  /**
   * The live stream's log of label changes (set by the front). Changes that
   * reach the catalogue from elsewhere (another node's, in cluster mode; a
   * failed write set back) are not this catalogue's to log.
   */
  changes: LabelChanges | null = null;
  /**
   * Cluster mode: the shards' replicas must learn a label set back after a
   * failed write when a change read from the label stream meanwhile was not
   * applied (applyStreamed()); set by the front.
   */
  replicasMissed: ((change: ReplicaChange) => void) | null = null;
  /**
   * Test hook (LOGBOOK_TEST_HOOKS=1, POST /__test__/labels/hold/<ms>, src/http/ops.ts):
   * until this time (ms since the epoch), a label write issued reports its
   * outcome only then, as on a store slow to make it durable.
   */
  heldUntil = 0;
  /**
   * Test hook (POST /__test__/labels/fail/<ms>/<skip>): the next label write
   * after `skip` more does not reach the store and fails `ms` later, as on a
   * store that could not write it (null: none).
   */
  failNext: { ms: number; skip: number } | null = null;

  constructor(private readonly store: LabelStore | null) {}

  /** Load the stored catalogue; returns the highest label id ever created. */
  load(): number {
    let max = 0;
    if (!this.store) return max;
    max = this.store.labelMaxId();
    for (const [id, l] of this.store.allLabels()) {
      this.add(new Label(id, l.name, l.created, l.updated));
      if (id > max) max = id;
    }
    return max;
  }

  /**
   * Is a name taken by another label? Also while another label is leaving it
   * (renamed or deleted, not durable yet): that change may fail and be set
   * back, and reads still show the label by it (shown()); and while a rename
   * to it is in flight, though a later one renamed the label on (that one may
   * fail, and the label be set back to it).
   */
  taken(name: string, exceptId = 0): boolean {
    const label = this.byName.get(name);
    if (label !== undefined && label.id !== exceptId) return true;
    for (const [id, w] of this.writing) if (id !== exceptId && isNamed(w, name)) return true;
    return false;
  }

  private add(label: Label): void {
    this.byId.set(label.id, label);
    this.byName.set(label.name, label);
  }

  /**
   * What a read shows of a label (GET /labels, /labels/:id): only what is
   * durable. A change is applied to the catalogue before it is (names it takes
   * are taken at once, a playbook write finds the label), and may still fail
   * and be set back (tracked()); until its write has succeeded, reads show the
   * label as it was before it. A label created by a playbook write still in
   * flight is not shown either: it goes again if that write fails (settle()).
   * Null: not shown.
   */
  shown(id: number): StoredLabel | null {
    if (this.provisional.has(id)) return null;
    const w = this.writing.get(id);
    return w ? w.shown : this.byId.get(id) ?? null;
  }

  /** Every label a read shows, as shown() shows it (in no particular order). */
  *shownAll(): Iterable<[number, StoredLabel]> {
    for (const [id, label] of this.byId) if (!this.writing.has(id) && !this.provisional.has(id)) yield [id, label];
    for (const [id, w] of this.writing) if (w.shown !== null && !this.provisional.has(id)) yield [id, w.shown];
  }

  /** How many labels a read shows (the `logbook_records{type="label"}` metric). */
  shownCount(): number {
    let n = 0;
    for (const _ of this.shownAll()) n++;
    return n;
  }

  /**
   * A change of the label is about to be applied to the catalogue: if no other
   * write of it is in flight, reads go on showing it as it is now (durable:
   * every write before settled, and a failed one was set back).
   */
  private hold(id: number): void {
    if (!this.store || this.writing.has(id)) return;
    const label = this.byId.get(id);
    const shown = label && !this.provisional.has(id) ? copy(label) : null;
    this.writing.set(id, { pending: 0, failed: false, shown, issued: 0, shownAt: 0, streamed: false, names: [] });
  }

  /** Store a created or changed label (hold() before it changed); resolves once it is stored, replicated and its change logged for the live stream. */
  private persist(label: Label, op: number): Promise<unknown> | null {
    const value = copy(label);
    const stored = this.store ? this.tracked(label.id, value, this.reported(() => this.store!.putLabel(label.id, value, op))) : null;
    return this.logged(op, label.id, label.toJSON(), stored, label.name);
  }

  /** Hand a change to the live stream's log (which replicates it); remember it until it is settled. */
  private logged(op: number, id: number, row: string | null, stored: Promise<unknown> | null, name: string | null): Promise<unknown> | null {
    const done = this.changes ? this.changes.record(op, id, row, stored, name) : stored;
    if (done === null) return null;
    this.settling.set(id, done);
    const clear = (): void => { if (this.settling.get(id) === done) this.settling.delete(id); };
    done.then(clear, clear);
    return done;
  }

  /**
   * A change is applied to the catalogue before it is durable (reads do not
   * show it until it is: shown(); the shards' replicas and the live stream
   * learn it only then, label_changes.ts). If its write fails, memory no longer
   * equals the store: once no other write of that label is in flight, the
   * label is set back to what the store holds (a failed create disappears, a
   * failed rename or delete is undone), before the request's 503 leaves when
   * it was the only write of that label.
   */
  private tracked(id: number, value: StoredLabel | null, write: Promise<unknown>): Promise<unknown> {
    let w = this.writing.get(id);
    if (!w) { w = { pending: 0, failed: false, shown: null, issued: 0, shownAt: 0, streamed: false, names: [] }; this.writing.set(id, w); }
    const n = ++w.issued;
    w.pending++;
    if (value !== null) w.names.push(value.name);
    const settled = (failed: boolean): void => {
      w.pending--;
      if (value !== null) w.names.splice(w.names.indexOf(value.name), 1);
      if (failed) w.failed = true;
      else if (n > w.shownAt) { w.shownAt = n; w.shown = value; } // durable now: reads show it
      if (w.pending > 0) return;
      this.writing.delete(id);
      // the replicas never learned the failed change: nothing to tell them, unless the catalogue
      // did not apply a change from the label stream meanwhile (applyStreamed(): their source too).
      // Without a failure, what it did not apply is older than this node's own changes (each append
      // expects the stream's last sequence: another node's change in between fails it)
      if (w.failed && this.store) {
        const change = this.applyStored(id, this.store.storedLabel(id));
        if (change && w.streamed) this.replicasMissed?.(change);
      }
    };
    return write.then((v) => { settled(false); return v; }, (err: unknown) => { settled(true); throw err; });
  }

  /** A write to the store, as the catalogue learns its outcome (later, while a test hook holds it; failed, when one fails it). */
  private reported<T>(issue: () => Promise<T>): Promise<T> {
    if (this.failNext !== null && this.failNext.skip-- === 0) {
      const { ms } = this.failNext;
      this.failNext = null;
      return new Promise<T>((_, reject) => { setTimeout(() => reject(new Error('the label store could not write the change (test hook)')), ms); });
    }
    const write = issue();
    const wait = this.heldUntil - Date.now();
    if (wait <= 0) return write;
    const later = () => new Promise<void>((r) => { setTimeout(r, wait); });
    return write.then((v) => later().then(() => v), (err: unknown) => later().then(() => { throw err; }));
  }

  create(id: number, name: string, now: number): { label: Label; persisted: Promise<unknown> | null } {
    this.hold(id);
    const label = new Label(id, name, now);
    this.add(label);
    this.provisional.delete(id);
    return { label, persisted: this.persist(label, OP_CREATE) };
  }

  touch(label: Label, name: string, now: number): Promise<unknown> | null {
    this.hold(label.id);
    if (name !== label.name) {
      this.byName.delete(label.name);
      label.name = name;
      this.byName.set(name, label);
    }
    label.updated = now;
    this.provisional.delete(label.id);
    return this.persist(label, OP_UPDATE);
  }

  remove(label: Label): Promise<unknown> | null {
    this.hold(label.id);
    this.byId.delete(label.id);
    if (this.byName.get(label.name) === label) this.byName.delete(label.name);
    this.provisional.delete(label.id);
    const stored = this.store ? this.tracked(label.id, null, this.reported(() => this.store!.removeLabel(label.id))) : null;
    return this.logged(OP_DELETE, label.id, null, stored, null);
  }

  /**
   * Cluster mode: a change read from the label stream (this node's own, or
   * another node's): applied, unless this node has a write of the label in
   * flight. The catalogue has that write's change already, newer than what
   * the stream delivers meanwhile (this node's earlier change, read back after
   * a later one was applied: setting it would give the name the later change
   * took back, for another label to take); if the write fails, the label is
   * set back to what the stream holds by then (tracked()).
   */
  applyStreamed(id: number, stored: StoredLabel | null): ReplicaChange | null {
    const w = this.writing.get(id);
    if (w && w.pending > 0) { w.streamed = true; return null; }
    return this.applyStored(id, stored);
  }

  /**
   * A change another node made (cluster mode: the label stream): apply it here.
   * Returns what the shards' replicas must learn, or null when nothing changed.
   */
  applyStored(id: number, stored: StoredLabel | null): ReplicaChange | null {
    const label = this.byId.get(id);
    if (stored === null) {
      if (!label) return null;
      this.byId.delete(id);
      if (this.byName.get(label.name) === label) this.byName.delete(label.name);
      this.provisional.delete(id);
      return { upsert: [], remove: [id] };
    }
    if (label && label.name === stored.name && label.updated === stored.updated && label.created === stored.created) return null;
    if (label) {
      if (this.byName.get(label.name) === label) this.byName.delete(label.name);
      label.name = stored.name;
      label.created = stored.created;
      label.updated = stored.updated;
      this.byName.set(label.name, label);
    } else this.add(new Label(id, stored.name, stored.created, stored.updated));
    return { upsert: [[id, stored.name]], remove: [] };
  }

  /**
   * Names → ids for a playbook write; unknown names become provisional labels
   * now. A label found by its name whose create or rename is still on its way
   * (another request's) is waited for too: until it is durable and in the
   * shards' replicas, the playbook would be shown without it or by its old name.
   */
  resolve(names: string[], allocate: () => number, now: number): Resolved {
    const out: Resolved = { ids: [], created: [], claims: [], persisted: null, retry: null };
    // Which label a name belongs to is not known while a change that moves it is on its way:
    // wait for that change, then resolve again (see unsettled())
    let waits: Promise<unknown>[] | null = null;
    // the names labels with writes in flight have or may end up with, gathered once: a write naming
    // a thousand new labels looked through every label in flight for each (two concurrent writes of
    // 100 k new labels: 10^10 steps)
    let inFlight: Map<string, number> | null = null;
    if (this.writing.size > 0) {
      inFlight = new Map();
      for (const [id, w] of this.writing) {
        if (w.shown !== null && !inFlight.has(w.shown.name)) inFlight.set(w.shown.name, id);
        for (const n of w.names) if (!inFlight.has(n)) inFlight.set(n, id);
      }
    }
    for (const name of names) {
      const wait = this.unsettled(name, inFlight);
      if (wait) (waits ??= []).push(wait);
    }
    if (waits) { out.retry = Promise.all(waits); return out; }
    const writes: Promise<unknown>[] = [];
    for (const name of names) {
      let label = this.byName.get(name);
      if (!label) {
        label = new Label(allocate(), name, now);
        this.hold(label.id);
        this.add(label);
        this.provisional.set(label.id, { refs: 0 });
        out.created.push(label);
        const p = this.persist(label, OP_CREATE);
        if (p) writes.push(p);
      } else {
        const pending = this.settling.get(label.id);
        if (pending) writes.push(pending);
      }
      const claim = this.provisional.get(label.id);
      if (claim) { claim.refs++; out.claims.push(label.id); }
      out.ids.push(label.id);
    }
    if (writes.length) out.persisted = Promise.all(writes);
    return out;
  }

  /**
   * A change on its way (not durable yet) that moves `name` between labels, so
   * that which label a playbook naming it gets depends on whether the change
   * succeeds: a label is leaving the name (renamed or deleted; were a label
   * created by it now, that change failing and set back would leave two
   * labels of one name, in the store too), or took it by a rename or a create
   * of its own (if that fails, the name is free again). Settles when the
   * change does, either way. Null: none (a label created for another playbook
   * write is shared instead: resolve() claims it). `inFlight`: name → a label
   * with writes in flight that has it or may end up with it (isNamed()).
   */
  private unsettled(name: string, inFlight: Map<string, number> | null): Promise<void> | null {
    const label = this.byName.get(name);
    let id: number | undefined;
    if (label) {
      const w = this.writing.get(label.id);
      if (w && w.shown?.name !== name && !this.provisional.has(label.id)) id = label.id;
    } else id = inFlight?.get(name);
    const done = id === undefined ? undefined : this.settling.get(id);
    return done ? done.then(() => {}, () => {}) : null;
  }

  /** The write holding `claims` finished; returns the labels removed because nothing used them. */
  settle(claims: number[], succeeded: boolean): Label[] {
    const dropped: Label[] = [];
    for (const id of claims) {
      const claim = this.provisional.get(id);
      if (!claim) continue;
      claim.refs--;
      if (succeeded) { this.provisional.delete(id); continue; }
      const label = this.byId.get(id);
      if (claim.refs <= 0 && label && this.store?.isStored?.(id)) { this.provisional.delete(id); continue; }
      // nothing waits for this removal; if it fails, tracked() sets the label back (no unhandled rejection)
      if (claim.refs <= 0 && label) { this.remove(label)?.catch(() => {}); dropped.push(label); }
    }
    return dropped;
  }
}

/** Does a label with writes in flight have, or may it end up with, this name (shown, or given by a write in flight)? */
function isNamed(w: Writing, name: string): boolean {
  return w.shown?.name === name || w.names.includes(name);
}

function copy(label: StoredLabel): StoredLabel {
  return { name: label.name, created: label.created, updated: label.updated };
}
