/**
 * NVIDIA MPS shapes a session inside its own slice: `set_default_active_thread_percentage P` caps the SMs
 * its clients may use (a ceiling, not a reservation; inside a private MIG slice that is the same thing).
 *
 * The model, measured on an H200 (132 SMs, driver 580.159.04, P = 1..100; docs/shared-box.md "How MPS percentages
 * map to SMs", bench/gpu/mps_sweep.py): the driver rounds P% of the S SMs DOWN to whole TPCs (2 SMs on Volta and
 * later), and on the whole GPU never gives fewer than 8 SMs (P = 1..7 all gave 8): P% gives
 * min(S, max(F, 2 x floor(P x S / 200))) with F = 8 there. Inside a MIG slice nothing was measured (that needs MIG
 * turned on); there F is assumed to be one TPC, so a small target keeps its small slice instead of a guessed floor
 * pushing it elsewhere.
 */
export const SMS_PER_TPC = 2
/** the fewest SMs an MPS client got on a whole (MIG-less) H200 */
export const MPS_MIN_SMS_WHOLE_GPU = 8

export function smsForPercentage(percentage: number, sliceSmCount: number, floorSms: number = SMS_PER_TPC): number {
  const rounded = SMS_PER_TPC * Math.floor((percentage * sliceSmCount) / (100 * SMS_PER_TPC))
  return Math.min(sliceSmCount, Math.max(floorSms, rounded))
}

export type MpsLevel = {readonly activeThreadPercentage: number; readonly smCount: number}

/** Every SM count MPS can give in a slice, each with the smallest percentage that gives it. */
export function mpsLevels(sliceSmCount: number, floorSms: number = SMS_PER_TPC): MpsLevel[] {
  const levels = new Map<number, number>()
  for (let percentage = 1; percentage <= 100; percentage++) {
    const smCount = smsForPercentage(percentage, sliceSmCount, floorSms)
    if (!levels.has(smCount)) levels.set(smCount, percentage)
  }
  // The whole slice is asked for as 100%, which reads as what it is.
  levels.set(sliceSmCount, 100)
  return [...levels].map(([smCount, activeThreadPercentage]) => ({activeThreadPercentage, smCount}))
}
