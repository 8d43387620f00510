/**
 * Resolves when `work` settles, fulfilled or not, or once `ms` have passed, whichever comes
 * first; the timer is cleared either way. For a shutdown step that must not wait on a stalled
 * peer for longer than its bound.
 */
export async function settledOrAfter(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, ms));
  });
  try {
    await Promise.race([work.then(ignore, ignore), late]);
  } finally {
    clearTimeout(timer);
  }
}

const ignore = (): void => {};
