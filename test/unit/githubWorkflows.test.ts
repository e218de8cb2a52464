import { readFileSync } from 'node:fs';
import path from 'node:path';

// The repository's GitHub workflows hold what a public package needs: checks on every change, and
// publication through npm's trusted publishing (OIDC) with provenance, never a stored token.
const workflow = (name: string) => readFileSync(path.join(__dirname, '..', '..', '.github', 'workflows', name), 'utf8');

describe('GitHub workflows', () => {
	it('ci.yml checks pull requests and pushes, and runs the end-to-end suite on a schedule or the e2e label', () => {
		const ci = workflow('ci.yml');
		expect(ci).toMatch(/^ {2}pull_request:/m);
		expect(ci).toMatch(/^ {2}push:/m);
		expect(ci).toMatch(/^ {2}schedule:/m);
		expect(ci).toContain('npm run test:all -- --skip-e2e --skip-bench');
		expect(ci).toContain("contains(github.event.pull_request.labels.*.name, 'e2e')");
		expect(ci).toContain('bash .ci/run');
	});

	it('publish.yml publishes through trusted publishing: id-token write, provenance, npm 11.5.1+, no NPM_TOKEN', () => {
		const publish = workflow('publish.yml');
		const publishJob = publish.slice(publish.indexOf('\n  publish:'));
		expect(publishJob).toMatch(/id-token: write/);
		expect(publishJob).toContain('npm publish --provenance --access public');
		expect(publishJob).toMatch(/npm install -g npm@\^11\.5\.1/);
		expect(publishJob).toContain('registry-url: https://registry.npmjs.org');
		// Not even in a comment's example: a token in the environment would be used instead of OIDC.
		expect(publish).not.toMatch(/NPM_TOKEN|NODE_AUTH_TOKEN:/);
		// The checks come first.
		expect(publish).toMatch(/publish:\n {4}needs: check/);
	});
});
