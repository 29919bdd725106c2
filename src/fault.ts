// Named points where the crash tests make the process die as a power cut or an OOM kill would:
// EFSYNC_FAULT_POINT=name kills the process (SIGKILL, no cleanup) the first time it passes
// `name`; name:N the N-th time. Unset (everywhere outside those tests), faultPoint does nothing.

export type FaultPoint =
  | 'open' // writer lock taken, writer file not opened yet
  | 'migration' // a migration committed in the draft, before the draft's checkpoint
  | 'staging' // a batch of series rows appended to its staging table, not merged yet
  | 'commit' // a transaction committed to the WAL, before the next checkpoint
  | 'flags' // actuals committed with their data-quality flags pending, the flags not computed yet
  | 'checkpoint' // publish checkpointed the writer file, nothing copied yet
  | 'cold-write' // a cold store file written and fsynced, cold_files and the hot table not changed yet
  | 'cold-pending' // a move's files recorded as pending, its hot rows not deleted yet
  | 'cold-rebuild' // a hot table created again without the days a move took, its first day left copied, inside the rebuild's transaction
  | 'publish-copy' // the snapshot draft copied beside the published file, not renamed yet
  | 'publish-rename' // the draft renamed over the published file, directory not synced yet
  | 'accuracy-batch' // a batch of the accuracy ledger's pairs committed, its state not written yet
  | 'accuracy-group' // a day group of the accuracy ledger's pairs in and its state saved up to it, the next group not started
  | 'accuracy-ledger' // the accuracy ledger committed, its scores not computed or stored yet
  | 'accuracy-stats' // a run of days' statistics stored and taken off the pending list, the next not stored yet
  | 'retention-slice' // a slice of retention's deletes committed (a day, whole sites; or a cold day's new file), the next not started
  | 'delta-files' // a Delta commit's data files written into the table, its log entry not written yet
  | 'delta-temp' // a Delta commit's log entry written and fsynced under its temporary name, not linked yet
  | 'delta-linked' // a Delta commit linked to its version's name (committed), its temporary name not removed yet
  | 'delta-checkpoint'; // a Delta checkpoint renamed into place, _last_checkpoint not written yet

const FAULT_POINTS: readonly FaultPoint[] = [
  'open',
  'migration',
  'staging',
  'commit',
  'flags',
  'checkpoint',
  'cold-write',
  'cold-pending',
  'cold-rebuild',
  'publish-copy',
  'publish-rename',
  'accuracy-batch',
  'accuracy-group',
  'accuracy-ledger',
  'accuracy-stats',
  'retention-slice',
  'delta-files',
  'delta-temp',
  'delta-linked',
  'delta-checkpoint',
];

export const faultPoint: (point: FaultPoint) => void = armed(process.env.EFSYNC_FAULT_POINT);

function armed(setting: string | undefined): (point: FaultPoint) => void {
  if (!setting) return () => undefined;
  const [name, nth = '1'] = setting.split(':');
  if (!FAULT_POINTS.includes(name as FaultPoint) || !/^[1-9]\d*$/.test(nth)) {
    throw new Error(`EFSYNC_FAULT_POINT=${setting}: expected one of ${FAULT_POINTS.join(', ')}, optionally :N`);
  }
  let left = Number(nth);
  return (point) => {
    if (point === name && --left === 0) process.kill(process.pid, 'SIGKILL');
  };
}
