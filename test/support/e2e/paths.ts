const path = require('node:path');
const { REPO_ROOT } = require('../stack/n8nStack');

const E2E_ROOT = process.env.E2E_WORK_ROOT ?? path.join(REPO_ROOT, '.e2e');
module.exports = { E2E_ROOT, STATE_FILE: path.join(E2E_ROOT, 'state.json') };
