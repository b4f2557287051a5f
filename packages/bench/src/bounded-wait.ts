/** A wait that cannot hang the bench. */

/** Resolves when `work` settles or after `ms`, whichever is first; never rejects, leaves no timer behind. */
export async function boundedWait(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work.then(() => undefined, () => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
