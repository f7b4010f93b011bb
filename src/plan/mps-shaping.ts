/**
 * NVIDIA MPS shapes a session inside its own slice: `set_default_active_thread_percentage P` caps the SMs
 * its clients may use (a ceiling, not a reservation; inside a private MIG slice that is the same thing).
 *
 * The model, documented in README ("How MPS percentages map to SMs"): the driver rounds the limit up to
 * whole TPCs (2 SMs on Volta and later), so P% of an S-SM slice gives min(S, 2 x ceil(P x S / 200)) SMs.
 * Not yet checked on a real GPU (none was available): verify --perf measures what a session really gets.
 */
export const SMS_PER_TPC = 2

export function smsForPercentage(percentage: number, sliceSmCount: number): number {
  return Math.min(sliceSmCount, SMS_PER_TPC * Math.ceil((percentage * sliceSmCount) / (100 * SMS_PER_TPC)))
}

export type MpsLevel = {readonly activeThreadPercentage: number; readonly smCount: number}

/** Every SM count MPS can give in a slice, each with the smallest percentage that gives it. */
export function mpsLevels(sliceSmCount: number): MpsLevel[] {
  const levels = new Map<number, number>()
  for (let percentage = 1; percentage <= 100; percentage++) {
    const smCount = smsForPercentage(percentage, sliceSmCount)
    if (!levels.has(smCount)) levels.set(smCount, percentage)
  }
  // The whole slice is asked for as 100%, which reads as what it is.
  levels.set(sliceSmCount, 100)
  return [...levels].map(([smCount, activeThreadPercentage]) => ({activeThreadPercentage, smCount}))
}
