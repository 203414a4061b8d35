import { copyFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { Command } from 'commander';
import { resolveWorkspaceDir } from '../../store/workspace.js';
import { makeUserFolder, shippedPath } from '../files.js';
import { confirmed } from '../op-command.js';
import { globals } from '../options.js';
import { isInteractive, say, writeData } from '../output.js';

/** `nfv init [DIR]`: a workspace folder with the shipped samples in it; asks only on a terminal, never overwrites. */
export const initCommand = new Command('init')
  .description('make a workspace folder and copy the shipped samples into it')
  .argument('[dir]', 'the workspace folder (default: -w, $NFV_WORKSPACE or ./workspaces/default)')
  .action(async (dir: string | undefined, _opts: unknown, self: Command) => {
    const target = dir ? path.resolve(dir) : resolveWorkspaceDir(globals(self).workspace);
    const existing = await readdir(target).catch(() => [] as string[]);
    if (
      existing.length &&
      isInteractive() &&
      !(await confirmed(`${target} is not empty; add the samples to it?`, false))
    ) {
      say('cancelled');
      return;
    }
    const samples = path.join(target, 'samples');
    await makeUserFolder('init', samples);
    const copied: string[] = [];
    // Every shipped sample: NFV documents, workspace resources, a rule set, Puppet payloads.
    for (const name of (await readdir(shippedPath('samples'))).sort()) {
      const to = path.join(samples, name);
      if (await stat(to).catch(() => undefined)) continue;
      await copyFile(shippedPath('samples', name), to);
      copied.push(name);
    }
    writeData(target);
    say(
      `workspace ready; ${copied.length ? `samples copied: ${copied.join(', ')}` : 'the samples were there already'}`,
    );
    say(`try: nfv -w ${target} simulate ${path.join(samples, 'office-nat.xml')}`);
  });
