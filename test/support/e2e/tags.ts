// Which end-to-end files run where, read from a tag line in each file's opening comment:
//   // e2e-tags: single queue compatibility
// `single` / `queue`: the topologies the file runs in. `compatibility`: the file is in the
// compatibility tier, the subset every proven n8n line other than the newest runs (the newest runs
// every file: the full tier); `compatibility:single` (or `:queue`) puts it there in that topology
// only, for a file whose other topology adds nothing line-dependent. The tag sits beside the test it selects, so no list is kept apart.
// Node 20 compatible: jest.e2e.config.js loads it through test/support/register-ts.js.
import fs from 'node:fs';
import path from 'node:path';

/** A topology of the e2e stack: one n8n process, or n8n's queue mode. */
export type Topology = 'single' | 'queue';
/** A tier: every file ('full'), or the files tagged `compatibility`. */
export type Tier = 'full' | 'compatibility';

/** The tags of one file. */
export interface E2eTags {
	topologies: Topology[];
	compatibility: boolean;
	compatibleIn: Topology[];
}

const E2E_DIR = path.join(__dirname, '..', '..', 'e2e');
export const TOPOLOGIES: Topology[] = ['single', 'queue'];
export const TIERS: Tier[] = ['full', 'compatibility'];
const TAG_LINE = /^\/\/ e2e-tags:(.*)$/m;

const isTopology = (word: string): word is Topology => (TOPOLOGIES as string[]).includes(word);
const isTier = (word: string): word is Tier => (TIERS as string[]).includes(word);

/** Every end-to-end test file, as paths relative to the repository root (sorted). */
export function e2eFiles(): string[] {
	const found: string[] = [];
	const walk = (dir: string) => {
		for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
			const full = path.join(dir, entry.name);
			if (entry.isDirectory()) walk(full);
			else if (/\.e2e\.test\.(js|ts)$/.test(entry.name)) found.push(full);
		}
	};
	walk(E2E_DIR);
	return found.map((file) => path.relative(path.join(E2E_DIR, '..', '..'), file)).sort();
}

/** The tags of one file: { topologies, compatibility }. Throws when the line is missing or names an unknown tag. */
export function tagsOf(file: string): E2eTags {
	return parseTags(file, fs.readFileSync(path.resolve(E2E_DIR, '..', '..', file), 'utf8'));
}

/** The tags in a file's text (`file` names it in errors). */
export function parseTags(file: string, text: string): E2eTags {
	const match = TAG_LINE.exec(text);
	if (!match) throw new Error(`${file} has no "// e2e-tags:" line naming its topologies (single, queue) and tier`);
	const words = match[1].trim().split(/\s+/).filter(Boolean);
	const scoped = TOPOLOGIES.map((topology) => `compatibility:${topology}`);
	const unknown = words.filter((word) => !isTopology(word) && word !== 'compatibility' && !scoped.includes(word));
	if (unknown.length > 0)
		throw new Error(
			`${file}: unknown e2e tag(s) ${unknown.join(', ')} (known: ${TOPOLOGIES.join(', ')}, compatibility, ${scoped.join(', ')})`,
		);
	const topologies = TOPOLOGIES.filter((topology) => words.includes(topology));
	if (topologies.length === 0) throw new Error(`${file}: its e2e-tags name no topology (single, queue)`);
	const compatibleIn = words.includes('compatibility')
		? topologies
		: topologies.filter((topology) => words.includes(`compatibility:${topology}`));
	return { topologies, compatibility: compatibleIn.length > 0, compatibleIn };
}

/** The files a topology runs in a tier ('full': every file tagged with the topology). */
export function selectE2eFiles({ topology, tier }: { topology: string; tier: string }): string[] {
	if (!isTopology(topology)) throw new Error(`unknown topology: ${topology}`);
	if (!isTier(tier)) throw new Error(`unknown e2e tier: ${tier} (${TIERS.join(' or ')})`);
	return e2eFiles().filter((file) => {
		const tags = tagsOf(file);
		return tags.topologies.includes(topology) && (tier === 'full' || tags.compatibleIn.includes(topology));
	});
}

/** E2E_TIER, default 'full'. */
export function selectedTier(env: NodeJS.ProcessEnv = process.env): Tier {
	const tier = env.E2E_TIER || 'full';
	if (!isTier(tier)) throw new Error(`E2E_TIER must be ${TIERS.join(' or ')} (got "${tier}")`);
	return tier;
}
