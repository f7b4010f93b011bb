import {Args, Flags, ux} from '@oclif/core'

import type {UpResult} from '../client/up-session.js'
import {COUNT_MAX} from '../core/names.js'
import {OBJECTIVES} from '../plan/types.js'
import {BaseCommand} from '../shell/base-command.js'
import {placeFlag} from '../shell/host-flag.js'
import {renderUp} from '../render/render-up.js'

export default class Up extends BaseCommand {
  static summary = 'Dress a host GPU up as another GPU: a MIG slice shaped by MPS, a VRAM cap and a costume'
  static description = `Plans like \`plan\`, then applies it as a journaled session: turns MIG mode on if needed (and records that it did), creates one GPU instance and one compute instance, and shapes the session inside its slice with an MPS daemon of its own (a share of the slice's SMs and a hard device-memory limit). Persistence mode is held on while any session needs it. The GPU-wide settings (clock lock, power limit) bind every tenant of the GPU, so only a session that holds the whole GPU takes them, or one that asks with --lock-clock/--cap-power; they are taken as shares ("leases"): a session that wants a different clock or power limit shares the one in force (the plan is recomputed with it), or fails with --strict.

Every change is written to the state directory before it is made; Ctrl-C finishes the current step and undoes the rest, and \`gpu-cosplay recover\` finishes the job after a crash. \`down\` puts everything back.

Then it starts a container on the slice, in the same journal (the GPU-wide settings are taken while it boots): the cosplay image (built on first use, before any GPU change) or --image, your workspace at /workspace, you as the user, sshd on 127.0.0.1, and returns once ssh logs in and, when the plan uses MPS, the session's MPS daemon runs (else it fails with MPS_NOT_RUNNING and undoes the session; --no-mps plans without MPS). With --no-container it stops after the GPU part and prints what your own workload needs.`
  static examples = [
    '<%= config.bin %> up 3090',
    '<%= config.bin %> up 3090 --no-container',
    '<%= config.bin %> up t4 --workspace ~/proj --volume /data:/data:ro --env HF_HOME=/data/hf',
    '<%= config.bin %> up t4 --host-gpu 1 --match fp32 --name t4-test --no-container',
    '<%= config.bin %> up 4090 --no-container --strict --json',
    '<%= config.bin %> up 3090 --ttl 8h --wait --timeout 30m',
    '<%= config.bin %> up 3090 --count 2',
  ]
  static args = {gpu: Args.string({required: true, description: 'target GPU, e.g. 3090, t4, a100-80g'})}
  static flags = {
    'host-gpu': Flags.integer({
      description: 'index of the host GPU to use (default 0; with --count N and no --host-gpu, the GPUs the planner places the ranks on)',
      min: 0,
    }),
    match: Flags.string({description: 'what to match most closely', options: [...OBJECTIVES], default: 'balanced'}),
    name: Flags.string({description: 'session name (default: <user>-<target>)'}),
    'no-container': Flags.boolean({description: 'only prepare the GPU; print the variables your own workload needs'}),
    strict: Flags.boolean({description: 'fail instead of sharing a clock or power limit another session holds'}),
    datasheet: Flags.boolean({description: "match datasheet peaks against the target's datasheet (as plan --datasheet), not what the card measures"}),
    count: Flags.integer({
      description:
        'N devices of the target in one session (one container, one name): N slices, each with its own MPS daemon and limits, on --host-gpu or, without it, on one GPU where they fit, else spread over the fewest GPUs (all or nothing); scripts for N real cards (torchrun, mp.spawn) run unchanged. See plan --count for what joins them',
      min: 1,
      max: COUNT_MAX,
    }),
    'no-mps': Flags.boolean({
      description:
        'shape the session without MPS (no daemon, no SM share or pinned memory limit), as on a host without the MPS control binary; the plan says what the session gets then',
    }),
    'lock-clock': Flags.boolean({
      description: 'lock the GPU-wide clock even on a slice (it binds every tenant of the GPU; by default only a whole-GPU session does)',
    }),
    'cap-power': Flags.boolean({description: "cap the GPU-wide power limit at the target's TDP even on a slice (it binds every tenant of the GPU)"}),
    image: Flags.string({
      description: 'image to run (default: the cosplay image, built on first use); any other image gets the entrypoint and hooks bind-mounted',
    }),
    workspace: Flags.string({description: 'host folder mounted at /workspace (default: the current folder)'}),
    volume: Flags.string({description: 'extra bind mount HOST:CONTAINER[:ro] (repeatable)', multiple: true}),
    env: Flags.string({description: 'extra variable NAME=VALUE for the container (repeatable)', multiple: true}),
    'ssh-port': Flags.integer({description: "host port for the container's sshd (default: a free one)", min: 1, max: 65535}),
    'ssh-bind': Flags.string({description: 'host address sshd is published on', default: '127.0.0.1'}),
    'shm-size': Flags.string({description: 'size of /dev/shm, e.g. 1g', default: '1g'}),
    sudo: Flags.boolean({
      description:
        'give yourself sudo in the container. That is root inside it, and so over everything mounted into it: a setuid-root file written to the workspace is root on the host. Without it, nothing you run there can become root. On a shared box only where the administrator allowed it',
      exclusive: ['no-container'],
    }),
    ttl: Flags.string({
      description: "end the session by itself after DURATION (e.g. 90s, 30m, 8h; see extend); default: the box's default TTL, if it has one",
    }),
    wait: Flags.boolean({description: "when no slice that fits is free, wait in the box's queue (fair between users) instead of failing; Ctrl-C leaves it"}),
    timeout: Flags.string({description: 'with --wait: give up after DURATION (e.g. 30m), changing nothing', dependsOn: ['wait']}),
    ...placeFlag,
  }

  async run(): Promise<UpResult> {
    const {args, flags} = await this.parse(Up)
    const quiet = this.jsonEnabled()
    const say = (line: string) => (quiet ? undefined : this.logToStderr(line))
    if (flags.host?.trim()) {
      // several boxes: plan on each, come up on the one whose plan is closest
      const {upOnBestHost} = await import('../client/choose-host.js')
      const placed = await upOnBestHost(flags.host, args.gpu, flags, {version: this.config.version, up: (host) => this.upOn(host), say})
      if (placed) return placed
    }
    const remote = await this.forwardToHost(flags.host, renderUp)
    if (remote) return remote.result
    const [{upRequestFrom, memberKey, withMemberKey}, {memberOfBox}, {perform}] = await Promise.all([
      import('../client/up-request.js'),
      import('../system/engine-client.js'),
      import('../engine/perform.js'),
    ])
    // a member of a shared box logs in with a key of their own, made here (the engine keeps its own for itself)
    const key = memberOfBox() ? await memberKey() : null
    const request = await upRequestFrom(args.gpu, flags, key)
    const progress = quiet ? null : {say, start: (action: string) => ux.action.start(action), stop: (outcome: string) => ux.action.stop(outcome)}
    const answer = await perform(request, {progress}, this.config.version)
    const result = key ? await withMemberKey(answer, key) : answer
    if (!quiet) this.log(renderUp(result))
    return result
  }

  /** `up` forwarded to one box, its result rendered as it arrives */
  private async upOn(host: string): Promise<UpResult> {
    const remote = await this.forwardToHost<UpResult>(host, renderUp)
    if (!remote) throw new Error(`no box named ${host}`)
    return remote.result
  }
}
