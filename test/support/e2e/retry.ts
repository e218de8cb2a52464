// E2E_RETRY_TIMES=1 (the full check sets it): a test that fails is run once more. The end-to-end
// tests are timed against a real n8n on two cores that the run shares between two stacks; on a slow
// day one answer in thousands comes past a sender's wait. The run's summary lists every test that
// needed another try, with its first failure: none is hidden, and a test that fails twice fails.
const retries = Number(process.env.E2E_RETRY_TIMES ?? 0);
if (retries > 0) jest.retryTimes(retries, { logErrorsBeforeRetry: true });
