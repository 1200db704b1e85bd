import type { LinkAsks, MemberRecord, MemberRole } from '../members/service.ts'
import { formatDate, formatDateTime } from './format.ts'
import { copyField } from './copy-field.ts'
import { html, type Html } from './html.ts'
import type { SignedIn } from './sessions.ts'
import { csrfField, layout, MEMBERS_PATH } from './views.ts'

export interface AddMemberForm {
  email: string
  role: MemberRole
  error?: string
}

/** A sign-in link just made, shown once to the owner who made it. */
export interface ShownLink {
  email: string
  url: string
  expiresAt: Date
  asks: LinkAsks
}

/** The business's members; owners add them (each with a one-time sign-in link), send new links to pending ones, remove them. */
export function membersPage(who: SignedIn, view: { members: MemberRecord[]; form?: AddMemberForm; link?: ShownLink; flash?: Html }): Html {
  const owner = who.role === 'owner'
  const form = view.form ?? { email: '', role: 'member' }
  return layout({
    title: 'Members',
    who,
    crumbs: [{ label: 'Settings' }, { label: 'Business' }, { label: 'Members', href: MEMBERS_PATH }],
    content: html`<h1>Members</h1>
<p class="lead">People who sign in to manage ${who.businessName}'s keys. Members and owners create, edit, roll and revoke keys;
owners also add and remove members and set the identity secret.</p>
${view.flash ?? null}
${
  view.link
    ? html`<section class="panel warning" aria-labelledby="link-heading" id="new-link">
  <h2 id="link-heading">Send ${view.link.email} their sign-in link</h2>
  <p><strong>Copy it now: it is shown only this once.</strong> It works once, until ${formatDateTime(view.link.expiresAt)}.
  ${
    view.link.asks === 'confirm'
      ? html`${view.link.email} already has a keygate account: on the link they type its password to join ${who.businessName}.`
      : html`On it they choose a password and join ${who.businessName}.`
  } Until then they are pending and see nothing of ${who.businessName}. Send it by a channel you trust.</p>
  ${copyField({ id: 'link-value', label: 'Sign-in link', value: view.link.url, button: 'Copy link', labelHidden: true })}
</section>`
    : null
}
<div class="table-wrap" role="region" aria-labelledby="members-caption" tabindex="0">
<table class="keys">
  <caption id="members-caption" class="visually-hidden">Members of ${who.businessName}</caption>
  <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Status</th><th scope="col">Added</th>${owner ? html`<th scope="col"><span class="visually-hidden">Action</span></th>` : null}</tr></thead>
  <tbody>${view.members.map(
    (m) => html`<tr data-member-id="${m.id}">
    <th scope="row">${m.email}${m.id === who.memberId ? html` <span class="muted small">(you)</span>` : null}</th>
    <td><span class="badge ${m.role === 'owner' ? 'private' : 'public'}">${m.role}</span></td>
    <td>${m.pending ? html`<span class="muted">pending: invited</span>` : 'joined'}</td>
    <td class="dates"><time datetime="${m.createdAt}">${formatDate(new Date(m.createdAt))}</time></td>
    ${
      owner
        ? html`<td>${
            m.id === who.memberId
              ? html`<span class="muted small">Another owner can remove you.</span>`
              : html`${
                  m.pending
                    ? html`<form method="post" action="${MEMBERS_PATH}/${m.id}/link" class="inline-form">
      ${csrfField(who)}
      <button type="submit" class="button small">New link<span class="visually-hidden"> for ${m.email}</span></button>
    </form>`
                    : null
                }<details class="allow">
      <summary class="button small">Remove<span class="visually-hidden"> ${m.email}</span></summary>
      <div class="allow-preview">
        <p>${m.email} is signed out of ${who.businessName} at once and can no longer open it. Their keys' changes stay in the audit trail.</p>
        <form method="post" action="${MEMBERS_PATH}/${m.id}/remove">
          ${csrfField(who)}
          <button type="submit" class="button danger small">Confirm: remove ${m.email}</button>
        </form>
      </div>
    </details>`
          }</td>`
        : null
    }
  </tr>`,
  )}</tbody>
</table>
</div>
${
  owner
    ? html`<form method="post" action="${MEMBERS_PATH}" class="stack key-form add-member" novalidate>
  <h2>Add a member</h2>
  ${csrfField(who)}
  ${form.error ? html`<div class="alert error" role="alert" id="member-error">${form.error}</div>` : null}
  <div class="field${form.error ? ' has-error' : ''}">
    <label for="member-email">Email</label>
    <input id="member-email" name="email" type="email" required maxlength="254" value="${form.email}" autocomplete="off"${form.error ? html` aria-invalid="true" aria-describedby="member-error"` : null}>
  </div>
  <fieldset class="field">
    <legend>Role</legend>
    <div class="checkbox"><input type="radio" id="role-member" name="role" value="member"${form.role === 'member' ? html` checked` : null}>
      <label for="role-member">Member <span class="muted">— manages keys</span></label></div>
    <div class="checkbox"><input type="radio" id="role-owner" name="role" value="owner"${form.role === 'owner' ? html` checked` : null}>
      <label for="role-owner">Owner <span class="muted">— also manages members and the identity secret</span></label></div>
  </fieldset>
  <p class="hint">You get a one-time sign-in link, shown here once, to send them. Someone new chooses a password on it;
  someone who already has a keygate account (a member of another business) types their own. Until they use it, they are
  pending and see nothing of ${who.businessName}.</p>
  <div class="button-row"><button type="submit" class="button primary">Add member</button></div>
</form>`
    : html`<p class="muted">Only owners add and remove members.</p>`
}`,
  })
}
