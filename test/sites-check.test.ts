// The site files offline (`efsync sites check`): the shipped demo files read clean; every mistake
// of a folder is one `file:line:column: rule` line (unknown keys, wrong types, values out of
// range, two files naming one site, YAML that does not parse); settings the docs do not describe
// pass through unchanged; and the command says each line and exits 2.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSiteDir, requestOf } from '../src/sites/files.js';
import { runCli } from './fixtures/runner-child.js';
import { tempDir, writeFiles } from './sites-support.js';

const BAD: Record<string, string> = {
  'a-unknown.yaml': `name: Unknown keys
type: solar
latitude: 59.8
longitude: 17.6
lattitude: 59.8
assets:
  - mount: fixed
    capacity: 500
    azimuth: 180
    tilt: 30
    tlit: 30
models:
  ai: { serving_priority: 1, serving: true }
`,
  'b-range.yaml': `name: Out of range
type: solar
latitude: 95
longitude: -181
settings:
  model_resolution: 2h
assets:
  - { mount: fixed, capacity: -5, azimuth: 180, tilt: 100 }
  - { mount: bogus, capacity: 5 }
priority_conflict_resolution: force
`,
  'c-types.yaml': `name: 42
type: wind
latitude: "north"
longitude: 17.6
assets: []
protect: yes please
`,
  'd-load.yaml': `name: Load with assets
type: load
latitude: 50
longitude: 8
assets: [{ mount: fixed, capacity: 1, azimuth: 1, tilt: 1 }]
`,
  'e-first.yaml': 'name: Twice\ntype: load\nlatitude: 50\nlongitude: 8\n',
  'e-second.yaml': '# the same site again\nname: Twice\ntype: load\nlatitude: 51\nlongitude: 9\n',
  'f-syntax.yaml': 'name: Broken\ntype: load\nlatitude: [50\n',
  'g-type.yaml': 'name: No type\nlatitude: 50\nlongitude: 8\n',
  'h-list.yaml': '- name: a list\n',
  'i-solar.yaml': `name: Solar without assets
type: solar
latitude: 50
longitude: 8
models:
  physical: { serving_active: maybe, serving_priority: 1.5 }
`,
  'j-priority.yaml': `name: Two models, one priority
type: load
latitude: 50
longitude: 8
models:
  ai: { serving_priority: 1 }
  physical: { serving_priority: 1 }
`,
  'notes.txt': 'not a site file: ignored',
};

describe('site files', () => {
  it('the shipped examples read clean: the four demo sites; the sites folder ships empty', () => {
    expect(readSiteDir('config/sites')).toEqual({ files: [], errors: [] });
    const { files, errors } = readSiteDir('config/examples/sites');
    expect(errors).toEqual([]);
    expect(files.map((f) => `${f.spec.type} ${f.spec.name}`)).toEqual([
      'wind Esbjerg wind',
      'load Freiburg load',
      'solar Sevilla solar tracking',
      'solar Uppsala solar fixed',
    ]);
  });

  it('names every mistake of a folder at its file:line:column', () => {
    const dir = tempDir('sites-bad');
    writeFiles(dir, BAD);
    const { files, errors } = readSiteDir(dir);
    expect(files.map((f) => f.spec.name)).toEqual(['Twice']);
    expect(errors.map((e) => e.message.replace(`${dir}/`, ''))).toEqual([
      'a-unknown.yaml:5:12: lattitude: Unrecognized key: "lattitude"',
      'a-unknown.yaml:11:11: assets.0.tlit: Unrecognized key: "tlit"',
      'a-unknown.yaml:13:39: models.ai.serving: Unrecognized key: "serving"',
      'b-range.yaml:3:11: latitude: Too big: expected number to be <=90',
      'b-range.yaml:4:12: longitude: Too small: expected number to be >=-180',
      'b-range.yaml:6:21: settings.model_resolution: Invalid option: expected one of "15min"|"30min"|"1h"|"1d"',
      'b-range.yaml:8:31: assets.0.capacity: Too small: expected number to be >0',
      'b-range.yaml:8:55: assets.0.tilt: Too big: expected number to be <=90',
      "b-range.yaml:9:14: assets.1.mount: Invalid discriminator value. Expected 'fixed' | 'single_axis_tracking' | 'dual_axis_tracking'",
      'b-range.yaml:10:31: priority_conflict_resolution: Invalid option: expected one of "strict"|"auto_increment"|"swap"',
      'c-types.yaml:1:7: name: Invalid input: expected string, received number',
      'c-types.yaml:3:11: latitude: Invalid input: expected number, received string',
      'c-types.yaml:5:9: assets: Too small: expected array to have >=1 items',
      'c-types.yaml:6:10: protect: Invalid input: expected boolean, received string',
      'd-load.yaml:5:9: assets: Unrecognized key: "assets"',
      'e-second.yaml:2:7: name: site "Twice" is also named by e-first.yaml',
      'f-syntax.yaml:4:1: Flow sequence in block collection must be sufficiently indented and end with a ] at line 4, column 1:',
      'g-type.yaml:1:1: type: must be solar, wind or load',
      'h-list.yaml:1:1: the file must be a mapping with name, type, latitude, longitude',
      'i-solar.yaml:1:1: assets: is required',
      'i-solar.yaml:6:31: models.physical.serving_active: Invalid input: expected boolean, received string',
      'i-solar.yaml:6:56: models.physical.serving_priority: Invalid input: expected int, received number',
      'j-priority.yaml:7:33: models.physical.serving_priority: 1 is also the priority of model ai',
    ]);
  });

  it("passes a setting the docs do not describe through unchanged, and fills a tracker's documented defaults", () => {
    const dir = tempDir('sites-pass');
    writeFiles(dir, {
      'x.yaml': `name: Pass through
type: solar
latitude: 50
longitude: 8
settings:
  model_resolution: 1h
  vendor_tuning: { horizon_days: 3, tags: [a, b] }
assets:
  - { mount: single_axis_tracking, capacity: 900 }
`,
    });
    const { files, errors } = readSiteDir(dir);
    expect(errors).toEqual([]);
    expect(requestOf(files[0].spec)).toEqual({
      name: 'Pass through',
      type: 'solar',
      latitude: 50,
      longitude: 8,
      settings: { model_resolution: '1h', vendor_tuning: { horizon_days: 3, tags: ['a', 'b'] } },
      assets: [{ mount: 'single_axis_tracking', capacity: 900, axis_tilt: 0, axis_azimuth: 180, max_angle: 60 }],
    });
  });

  it('efsync sites check says every line on stderr and exits 2; plan stops there too, before any request', async () => {
    const dir = tempDir('sites-cli-bad');
    writeFiles(dir, { 'c-types.yaml': BAD['c-types.yaml'], 'ok.yaml': BAD['e-first.yaml'] });
    const check = await runCli(['sites', 'check', '--dir', dir]);
    expect(check.code).toBe(2);
    expect(check.stdout).toContain(`ok  ${join(dir, 'ok.yaml')}: load site "Twice"`);
    expect(check.stderr.split('\n').filter((line) => line.startsWith(dir))).toHaveLength(4);
    expect(check.stderr).toContain('4 errors in 1 site file: nothing was sent to the service');
    const plan = await runCli(['sites', 'plan', '--dir', dir, '--detailed-exitcode'], {
      EFSYNC_BASE_URL: 'http://127.0.0.1:9',
      EFSYNC_API_KEY: 'unused',
    });
    expect(plan.code).toBe(1);
    expect(plan.stderr).toContain(
      `${join(dir, 'c-types.yaml')}:3:11: latitude: Invalid input: expected number, received string`,
    );
  });
});
