import {Flags, ux} from '@oclif/core'

import {InputError} from '../../core/errors.js'
import type {InstallResult} from '../../system/box-install.js'
import {BaseCommand} from '../../shell/base-command.js'
import {renderInstall} from '../../render/render-system.js'

export type SystemInstallResult = InstallResult

export default class SystemInstall extends BaseCommand {
  static summary = 'Set this box up for a team: unprivileged users, one root engine that checks who asks'
  static description = `Run once by root, after installing gpu-cosplay for the whole box (root-owned, e.g. npm install -g of the tarball npm pack makes). It creates the group (default gpu-cosplay) whose members may use gpu-cosplay (add users with usermod -aG); a state directory that root alone writes (default /var/lib/gpu-cosplay; an earlier team set-up's 1777 folder is taken over when no session is up); /etc/gpu-cosplay/config.yaml, root's, which fixes the state directory and the nvidia-smi and MPS control programs for the box; and the engine's entry point (/usr/local/libexec/gpu-cosplay/engine) and one sudoers rule that lets the group run exactly it as root (checked by visudo first).

It also installs the reaper, which ends sessions at their TTL (and idle ones, with --idle-reclaim) after telling their users: a systemd timer every 30 s (gpu-cosplay-reap.timer) where systemd runs, else an /etc/cron.d entry every minute, else none (system status says so). Fair share is off until set: --default-ttl, --max-ttl, --idle-reclaim and --quota-sessions/--quota-slices (per-group and per-user quotas are edited in the YAML); give none to remove one. A member's container is limited from the start (--container-memory 64g, --container-pids 8192, --shm-size-max 16g by default; none removes a limit).

Members then use every command as before, with no docker group and no sudo rule of their own: a command that touches the GPU, Docker or the state runs in the engine, which knows the caller from sudo and acts only on their sessions. Run it again to change a setting; settings not given are kept. Needs --yes.`
  static examples = [
    '<%= config.bin %> system install --yes',
    '<%= config.bin %> system install --group ml-team --nvidia-smi /usr/bin/nvidia-smi --yes',
    '<%= config.bin %> system install --default-ttl 8h --max-ttl 24h --idle-reclaim 2h --quota-sessions 2 --yes',
  ]
  static flags = {
    group: Flags.string({description: 'the group whose members may use gpu-cosplay (default gpu-cosplay)'}),
    'state-dir': Flags.string({description: 'the state directory, root-owned (default /var/lib/gpu-cosplay)'}),
    'nvidia-smi': Flags.string({description: "nvidia-smi for the engine (default: the one on root's PATH); root-owned"}),
    'mps-control': Flags.string({description: "nvidia-cuda-mps-control for the engine (default: the one on root's PATH, if any); root-owned"}),
    'allow-container-sudo': Flags.boolean({
      description: 'let up --sudo give a session user sudo in their container (root over everything mounted there)',
      allowNo: true,
    }),
    'default-ttl': Flags.string({description: 'the TTL of an up without --ttl, e.g. 8h (none: no default)'}),
    'max-ttl': Flags.string({description: 'the longest TTL a member may ask for or extend to, e.g. 24h (none: no maximum)'}),
    'idle-reclaim': Flags.string({description: 'end a session nobody used for this long, e.g. 2h (none: never; the default)'}),
    'quota-sessions': Flags.string({description: 'sessions one member may hold at once (none: no limit); per group/user in the YAML'}),
    'quota-slices': Flags.string({description: 'MIG memory slices one member may hold at once; a whole GPU counts 8 (none: no limit)'}),
    'container-memory': Flags.string({description: "a member's container memory, swap included, e.g. 64g (the default; none: no limit)"}),
    'container-pids': Flags.string({description: "processes and threads in a member's container, e.g. 8192 (the default; none: no limit)"}),
    'shm-size-max': Flags.string({description: 'the largest up --shm-size a member may ask, e.g. 16g (the default; none: no limit)'}),
    yes: Flags.boolean({description: 'really do it'}),
  }

  async run(): Promise<SystemInstallResult> {
    const {flags} = await this.parse(SystemInstall)
    if (!flags.yes) {
      throw new InputError(
        'CONFIRMATION_REQUIRED',
        'system install adds a group, a sudoers rule, an entry point and /etc/gpu-cosplay, and takes over the state directory',
        {
          fix: ['sudo gpu-cosplay system install --yes'],
        },
      )
    }
    const [{installBox}, {LocalExecutor}] = await Promise.all([import('../../system/box-install.js'), import('../../core/local-executor.js')])
    if (!this.jsonEnabled()) ux.action.start('Installing gpu-cosplay for this box')
    const result = await installBox(
      {
        group: flags.group,
        stateDir: flags['state-dir'],
        nvidiaSmi: flags['nvidia-smi'],
        mpsControl: flags['mps-control'],
        allowContainerSudo: flags['allow-container-sudo'],
        defaultTtl: flags['default-ttl'],
        maxTtl: flags['max-ttl'],
        idleReclaim: flags['idle-reclaim'],
        quotaSessions: flags['quota-sessions'],
        quotaSlices: flags['quota-slices'],
        containerMemory: flags['container-memory'],
        containerPids: flags['container-pids'],
        shmSizeMax: flags['shm-size-max'],
      },
      new LocalExecutor(),
    ).catch((error: unknown) => {
      if (!this.jsonEnabled()) ux.action.stop('failed')
      throw error
    })
    if (!this.jsonEnabled()) {
      ux.action.stop('done')
      this.log(renderInstall(result))
    }
    return result
  }
}
