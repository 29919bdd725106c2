import { describe, expect, it } from 'vitest';
import { type BlockSpan, StoredVintages, spanOf } from '../src/warehouse/stored-vintages.js';

const span = (issue: number, firstValid: number, lastValid = firstValid, modelId = 'm'): BlockSpan => ({
  modelId,
  issue,
  firstValid,
  lastValid,
});

/** A table that held no row of s1 when asked, and one load of it recorded: vintages 10 (valid 100-190), 20, 25, 30 (valid 300). */
function known(): StoredVintages {
  const stored = new StoredVintages();
  stored.learn(stored.unknown(['s1']), false);
  stored.record('s1', [span(30, 300), span(10, 100, 190), span(20, 200, 250), span(25, 255, 260)]);
  return stored;
}

describe('stored vintages', () => {
  it('asks about a site once, and knows nothing of a site the table held rows of', () => {
    const stored = known();
    expect(stored.unknown(['s1', 's2'])).toEqual(['s2']);
    stored.learn(['s2'], true);
    expect(stored.unknown(['s1', 's2'])).toEqual([]);
    expect(stored.allNew([{ siteId: 's2', spans: [span(1, 1)] }])).toBe(false);
  });

  it("tells new the oldest vintage of a site's last load at valid times that load did not hold, and any older vintage", () => {
    const stored = known();
    expect(stored.allNew([{ siteId: 's1', spans: [span(10, 50, 99), span(5, 100), span(9, 300)] }])).toBe(true);
    expect(stored.allNew([{ siteId: 's1', spans: [span(10, 190, 400)] }])).toBe(false);
  });

  it('takes a vintage within the hull of the rest at valid times within it as stored, outside them as new', () => {
    const stored = known();
    expect(stored.allNew([{ siteId: 's1', spans: [span(22, 240)] }])).toBe(false);
    expect(stored.allNew([{ siteId: 's1', spans: [span(30, 200, 290)] }])).toBe(false);
    expect(stored.allNew([{ siteId: 's1', spans: [span(22, 310)] }])).toBe(true);
    expect(stored.allNew([{ siteId: 's1', spans: [span(20, 100, 199)] }])).toBe(true);
  });

  it('folds the edge into the hull at the next load, which gives the new edge', () => {
    const stored = known();
    stored.record('s1', [span(8, 50, 60), span(9, 70, 80)]);
    expect(stored.allNew([{ siteId: 's1', spans: [span(10, 100)] }])).toBe(false);
    expect(stored.allNew([{ siteId: 's1', spans: [span(8, 55)] }])).toBe(false);
    expect(stored.allNew([{ siteId: 's1', spans: [span(8, 40, 45), span(7, 55)] }])).toBe(true);
  });

  it('keeps models apart, and a load with a block not spanned leaves its site unknown', () => {
    const stored = known();
    expect(stored.allNew([{ siteId: 's1', spans: [span(20, 200, 250, 'other')] }])).toBe(true);
    expect(stored.allNew([{ siteId: 's1', spans: undefined }])).toBe(false);
    stored.record('s1', undefined);
    expect(stored.allNew([{ siteId: 's1', spans: [span(99, 999)] }])).toBe(false);
    expect(stored.unknown(['s1'])).toEqual([]);
  });

  it('spans a block whatever the order of its valid times', () => {
    expect(spanOf('', 7, [30, 10, 20])).toEqual({ modelId: '', issue: 7, firstValid: 10, lastValid: 30 });
  });

  it("keeps every site's entries apart across the pool's chunks, whatever the order sites add models in", () => {
    const stored = new StoredVintages();
    const sites = Array.from({ length: 5000 }, (_, i) => `s${i}`);
    stored.learn(stored.unknown(sites), false);
    for (const [i, site] of sites.entries()) stored.record(site, [span(i, i)]);
    for (const [i, site] of sites.entries()) stored.record(site, [span(i, i, i, 'other')]);
    for (const i of [0, 4095, 4096, 4999]) {
      expect(stored.allNew([{ siteId: `s${i}`, spans: [span(i, i)] }])).toBe(false);
      expect(stored.allNew([{ siteId: `s${i}`, spans: [span(i, i, i, 'other')] }])).toBe(false);
      expect(stored.allNew([{ siteId: `s${i}`, spans: [span(i + 1, i)] }])).toBe(true);
    }
  });
});
