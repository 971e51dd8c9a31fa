// The label catalogue: labels are unique by name across all playbooks, so one
// owner (the front) keeps them. Shards hold a replica of id → name for rendering
// playbooks; every change here is broadcast to them.
import type { NewLabel } from '../shard/protocol.js';
import { formatTimestamp } from '../api/time.js';

export class Label {
  id: number; name: string; created: number; updated: number;
  constructor(id: number, name: string, created: number) {
    this.id = id; this.name = name; this.created = created; this.updated = created;
  }
  toJSON(): string {
    return '{"id":' + this.id + ',"created":"' + formatTimestamp(this.created) + '","updated":"'
      + formatTimestamp(this.updated) + '","name":' + JSON.stringify(this.name) + '}';
  }
}

interface PendingLabel { id: number; refs: number }

export class LabelCatalogue {
  readonly byId = new Map<number, Label>();
  readonly byName = new Map<string, Label>();
  /** names a playbook write in flight is creating: a second write reuses the id */
  private readonly pending = new Map<string, PendingLabel>();

  /** Is a name taken (by a label, or by one being created)? */
  taken(name: string, exceptId = 0): boolean {
    const label = this.byName.get(name);
    if (label && label.id !== exceptId) return true;
    return this.pending.has(name);
  }

  add(label: Label): void {
    this.byId.set(label.id, label);
    this.byName.set(label.name, label);
  }

  rename(label: Label, name: string, now: number): void {
    this.byName.delete(label.name);
    label.name = name;
    label.updated = now;
    this.byName.set(name, label);
  }

  remove(label: Label): void {
    this.byId.delete(label.id);
    this.byName.delete(label.name);
  }

  /**
   * Names → ids for a playbook write. Unknown names get an id now but become
   * labels only when the write commits (confirm), so a refused write leaves none.
   */
  resolve(names: string[], allocate: () => number): { ids: number[]; fresh: NewLabel[] } {
    const ids: number[] = [];
    const fresh: NewLabel[] = [];
    for (const name of names) {
      const label = this.byName.get(name);
      if (label) { ids.push(label.id); continue; }
      let pending = this.pending.get(name);
      if (!pending) { pending = { id: allocate(), refs: 0 }; this.pending.set(name, pending); }
      pending.refs++;
      ids.push(pending.id);
      fresh.push({ id: pending.id, name });
    }
    return { ids, fresh };
  }

  /** The write that carried `fresh` finished; `created` lists the labels it made real. */
  settle(fresh: NewLabel[], created: Array<[number, string, number]> | null): Label[] {
    const made: Label[] = [];
    for (const [id, name, at] of created ?? []) {
      if (!this.byId.has(id)) { const label = new Label(id, name, at); this.add(label); made.push(label); }
    }
    for (const { name } of fresh) {
      const pending = this.pending.get(name);
      if (pending && --pending.refs <= 0) this.pending.delete(name);
    }
    return made;
  }
}
