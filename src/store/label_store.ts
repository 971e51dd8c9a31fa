// What the front's labels need from persistence (http/labels.ts keeps the
// catalogue, http/label_changes.ts numbers the changes for the live stream),
// implemented by the front store on LMDB (front_store.ts) and, in cluster mode,
// by the label stream (cluster/labels.ts).

/** A label as stored (its id is the key). */
export interface StoredLabel { name: string; created: number; updated: number }

export interface LabelStore {
  /**
   * `op`: OP_CREATE or OP_UPDATE, for a store that keeps it with the label
   * (the cluster's label stream: the partitions log each change from it).
   * Cluster mode: resolves with the label stream's sequence of the change.
   */
  putLabel(id: number, label: StoredLabel, op?: number): Promise<unknown>;
  /** Cluster mode: resolves with the label stream's sequence of the change (none: nothing was stored, so nothing removed). */
  removeLabel(id: number): Promise<unknown>;
  /** the highest label id ever created, deleted ones included */
  labelMaxId(): number;
  allLabels(): Iterable<[number, StoredLabel]>;
  /** what is stored for one label now (null: nothing) */
  storedLabel(id: number): StoredLabel | null;
  /**
   * Cluster mode: is the label stored (whoever stored it)? A provisional label
   * that is stored stays when the write that created it fails: another node's
   * playbook may use it by then.
   */
  isStored?(id: number): boolean;
}

/** What front.mdb keeps of a label change until every shard has logged it. */
export interface StoredLabelChange { op: number; id: number; row: string | null }

/**
 * Where the changes are kept (FrontStore). Absent: in cluster mode the label
 * stream numbers them (`numberedByStore`); with no store at all they are not
 * numbered, kept, nor tried again.
 */
export interface LabelChangeStore {
  /** the highest number given to a change (0: none) */
  labelChangeSeq(): number;
  /** keep a change (and its number as the highest): called in the same turn as the label's own write, so one transaction */
  putLabelChange(seq: number, change: StoredLabelChange): void;
  /** every shard has logged it */
  removeLabelChange(seq: number): void;
  /** the changes kept, oldest first */
  pendingLabelChanges(): Iterable<[number, StoredLabelChange]>;
}
