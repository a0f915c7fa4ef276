from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin

from accounts.models import ApiToken, Invitation, Membership, Team, User


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    fieldsets = (*DjangoUserAdmin.fieldsets, ("Profile", {"fields": ("display_name",)}))


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ("user",)


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "created_at")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [MembershipInline]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = (
        "team",
        "role",
        "created_by",
        "created_at",
        "expires_at",
        "accepted_by",
        "revoked_at",
    )
    list_filter = ("role",)
    # Tokens are created in the app, where the link is shown once; here they are only audited.
    readonly_fields = ("token_hash", "accepted_by", "accepted_at", "created_by", "created_at")

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens for audit: who holds which, what they may do, when each was last used. Only a
    hash is stored, so nothing here can be used to call the API; revoke by setting
    ``revoked_at``."""

    list_display = ("name", "user", "prefix", "read_only", "team", "last_used_at", "revoked_at")
    list_filter = ("read_only", "revoked_at")
    search_fields = ("name", "user__username", "prefix")
    readonly_fields = (
        "prefix",
        "token_hash",
        "created_at",
        "last_used_at",
        "rate_window",
        "rate_count",
    )
    fields = ("user", "name", "read_only", "team", "revoked_at", *readonly_fields)
    raw_id_fields = ("user",)

    def has_add_permission(self, request) -> bool:
        return False  # tokens are created by their owner, who sees the secret once
